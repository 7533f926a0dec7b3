package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// mirrorsFor is the --registry-mirror-for flag: each HOST=URL adds URL to
// HOST's mirrors, in the order given.
type mirrorsFor struct{ m *map[string][]string }

func (f mirrorsFor) String() string {
	if f.m == nil || len(*f.m) == 0 {
		return ""
	}
	var parts []string
	for _, h := range slices.Sorted(maps.Keys(*f.m)) {
		for _, u := range (*f.m)[h] {
			parts = append(parts, h+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

func (f mirrorsFor) Set(v string) error {
	host, u, ok := strings.Cut(v, "=")
	if !ok || host == "" || u == "" {
		return fmt.Errorf("%q is not HOST=URL", v)
	}
	if *f.m == nil {
		*f.m = map[string][]string{}
	}
	(*f.m)[host] = append((*f.m)[host], u)
	return nil
}

func (f mirrorsFor) Type() string { return "HOST=URL" }
