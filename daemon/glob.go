package daemon

import "path"

// globMatch matches a shell pattern; a malformed pattern matches nothing.
func globMatch(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}
