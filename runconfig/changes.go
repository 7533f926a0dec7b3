package runconfig

import (
	"encoding/json"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ApplyChanges applies Dockerfile-style instructions (`docker import -c`,
// `docker commit -c`) to an image config.
func ApplyChanges(cfg *ocispec.ImageConfig, changes []string) error {
	for _, change := range changes {
		change = strings.TrimSpace(change)
		if change == "" {
			continue
		}
		instr, rest, _ := strings.Cut(change, " ")
		rest = strings.TrimSpace(rest)
		var err error
		switch strings.ToUpper(instr) {
		case "CMD":
			cfg.Cmd, err = commandForm(rest)
		case "ENTRYPOINT":
			cfg.Entrypoint, err = commandForm(rest)
		case "ENV":
			var kvs []string
			kvs, err = keyValues(rest, "ENV")
			cfg.Env = MergeEnv(cfg.Env, kvs)
		case "LABEL":
			var kvs []string
			kvs, err = keyValues(rest, "LABEL")
			if cfg.Labels == nil {
				cfg.Labels = map[string]string{}
			}
			for _, kv := range kvs {
				k, v, _ := strings.Cut(kv, "=")
				cfg.Labels[k] = v
			}
		case "WORKDIR":
			cfg.WorkingDir = rest
		case "USER":
			cfg.User = rest
		case "STOPSIGNAL":
			cfg.StopSignal = rest
		case "EXPOSE":
			if cfg.ExposedPorts == nil {
				cfg.ExposedPorts = map[string]struct{}{}
			}
			for _, p := range strings.Fields(rest) {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				cfg.ExposedPorts[p] = struct{}{}
			}
		case "VOLUME":
			var vols []string
			if strings.HasPrefix(rest, "[") {
				err = json.Unmarshal([]byte(rest), &vols)
			} else {
				vols = strings.Fields(rest)
			}
			if cfg.Volumes == nil {
				cfg.Volumes = map[string]struct{}{}
			}
			for _, v := range vols {
				cfg.Volumes[v] = struct{}{}
			}
		default:
			return errdefs.InvalidParameter(fmt.Errorf("%s is not a valid change command", instr))
		}
		if err != nil {
			return errdefs.InvalidParameter(fmt.Errorf("invalid change %q: %w", change, err))
		}
	}
	return nil
}

// commandForm reads the exec form (a JSON array) or the shell form, which
// runs under /bin/sh -c as in a Dockerfile.
func commandForm(s string) ([]string, error) {
	if strings.HasPrefix(s, "[") {
		var argv []string
		if err := json.Unmarshal([]byte(s), &argv); err != nil {
			return nil, fmt.Errorf("not a JSON array of strings: %w", err)
		}
		return argv, nil
	}
	if s == "" {
		return nil, fmt.Errorf("empty command")
	}
	return []string{"/bin/sh", "-c", s}, nil
}

// keyValues reads "k=v k2=v2" or the legacy "k v" form.
func keyValues(s, instr string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("%s needs at least one argument", instr)
	}
	if !strings.Contains(strings.Fields(s)[0], "=") {
		k, v, _ := strings.Cut(s, " ")
		return []string{k + "=" + strings.TrimSpace(v)}, nil
	}
	var out []string
	for _, f := range splitQuoted(s) {
		if !strings.Contains(f, "=") {
			return nil, fmt.Errorf("%s names must be followed by '=': %q", instr, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// splitQuoted splits on spaces outside double quotes and drops the quotes.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote := false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
		case r == ' ' && !inQuote:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
