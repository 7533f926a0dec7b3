package opts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ParseSecurityOpts normalises --security-opt values. The only rewrite is
// seccomp=<file>: the daemon may run elsewhere, so the client inlines the
// profile's JSON, as docker does. "unconfined" and "builtin" pass through.
func ParseSecurityOpts(values []string) ([]string, error) {
	out := make([]string, 0, len(values))
	for _, v := range values {
		key, val, ok := strings.Cut(v, "=")
		if !ok {
			// docker still accepts the old "key:value" spelling for label/apparmor.
			if k, vv, colon := strings.Cut(v, ":"); colon && (k == "label" || k == "apparmor" || k == "seccomp") {
				key, val, ok = k, vv, true
			}
		}
		if !ok {
			// The flags that take no value (the daemon reads them as =true).
			if v == "no-new-privileges" || v == "writable-cgroups" {
				out = append(out, v)
				continue
			}
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid --security-opt: %q", v))
		}
		if key == "seccomp" && val != "unconfined" && val != "builtin" {
			data, err := os.ReadFile(val)
			if err != nil {
				return nil, errdefs.InvalidParameter(fmt.Errorf("opening seccomp profile (%s) failed: %w", val, err))
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, data); err != nil {
				return nil, errdefs.InvalidParameter(fmt.Errorf("compacting json for seccomp profile (%s) failed: %w", val, err))
			}
			out = append(out, "seccomp="+compact.String())
			continue
		}
		out = append(out, key+"="+val)
	}
	return out, nil
}
