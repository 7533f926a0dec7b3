package image

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"

	"github.com/sdengine/engine/pkg/errdefs"
)

// normalizeTag turns a user reference into the familiar "name:tag" form
// the store keys tags by: "busybox" -> "busybox:latest",
// "docker.io/library/busybox" -> "busybox:latest", while
// "localhost:5000/a/b:t" keeps its registry.
func normalizeTag(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %q: %w", ref, err))
	}
	if _, ok := named.(reference.Digested); ok {
		return "", errdefs.InvalidParameter(fmt.Errorf("invalid reference %q: digest references are not supported", ref))
	}
	return reference.FamiliarString(reference.TagNameOnly(named)), nil
}

// fullName is the fully qualified form ("docker.io/library/busybox:latest")
// used in OCI index annotations.
func fullName(tag string) string {
	named, err := reference.ParseNormalizedNamed(tag)
	if err != nil {
		return tag
	}
	return reference.TagNameOnly(named).String()
}

// splitTag splits a normalized "name:tag" into its repository and tag.
func splitTag(tag string) (string, string) {
	i := strings.LastIndex(tag, ":")
	if i < 0 || i < strings.LastIndex(tag, "/") {
		return tag, "latest"
	}
	return tag[:i], tag[i+1:]
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// searchNamesLocked are the names ref is looked up as: itself, or, for
// a Docker Hub name under a search list, that name on each registry of
// the list in order (Docker Hub names are the unqualified ones: Docker's
// client sends "fedora" as "docker.io/library/fedora").
func (s *Store) searchNamesLocked(ref string) []string {
	if len(s.searchList) == 0 {
		return []string{ref}
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil || reference.Domain(named) != "docker.io" {
		return []string{ref}
	}
	short := reference.FamiliarString(named)
	out := make([]string, 0, len(s.searchList))
	for _, h := range s.searchList {
		if h == "docker.io" {
			out = append(out, ref)
		} else {
			out = append(out, h+"/"+short)
		}
	}
	return out
}
