package opts

import (
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/filters"
	"github.com/sdengine/engine/pkg/errdefs"
)

// ParseFilters turns repeated --filter key=value flags into filters.Args.
// Keys are lower-cased like docker does; surrounding blanks are trimmed from both.
func ParseFilters(values []string) (filters.Args, error) {
	args := filters.NewArgs()
	for _, v := range values {
		k, val, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return args, errdefs.InvalidParameter(fmt.Errorf("bad format of filter (expected name=value)"))
		}
		args.Add(strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(val))
	}
	return args, nil
}
