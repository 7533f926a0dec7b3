package opts

import (
	"fmt"
	"strings"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ConvertKVStringsToMap turns KEY=VALUE strings into a map; a bare KEY maps
// to the empty string. Later entries win.
func ConvertKVStringsToMap(values []string) map[string]string {
	out := make(map[string]string, len(values))
	for _, v := range values {
		k, val, _ := strings.Cut(v, "=")
		out[k] = val
	}
	return out
}

// BuildLabels merges label files and then -l values into a label map.
func BuildLabels(labelFiles, labels []string) (map[string]string, error) {
	var all []string
	for _, f := range labelFiles {
		l, err := ParseLabelFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, l...)
	}
	for _, l := range labels {
		if k, _, _ := strings.Cut(l, "="); strings.TrimSpace(k) == "" {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid label '%s': empty name", l))
		}
		all = append(all, l)
	}
	return ConvertKVStringsToMap(all), nil
}

// ParseKeyValueOpts parses key=value options such as --log-opt; the '='
// is mandatory here because an option without a value is meaningless.
func ParseKeyValueOpts(values []string, what string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(values))
	for _, v := range values {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid %s format '%s': expected key=value", what, v))
		}
		out[k] = val
	}
	return out, nil
}
