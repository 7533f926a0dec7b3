package distribution

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/registry"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Red Hat's search list (the 2016 docker fork's --add-registry and
// --block-registry), an opt-in: with registries added, an unqualified
// name ("fedora") is looked for in each of them in order and then on
// Docker Hub; a blocked registry is refused for pull, push and search.
// Nothing configured leaves Docker's behaviour: unqualified names are
// Docker Hub's.

// blockAllRegistries, given to --block-registry, blocks every registry
// that is not in the search list (Docker Hub too, unless added).
const blockAllRegistries = "all"

// normalizeRegistry is a search or block list entry as a host[:port]:
// a scheme and a trailing slash are dropped, Docker Hub's names are
// docker.io.
func normalizeRegistry(r string) (string, error) {
	r = strings.TrimSpace(r)
	r = strings.TrimPrefix(strings.TrimPrefix(r, "http://"), "https://")
	r = strings.TrimSuffix(r, "/")
	if r == "" || strings.ContainsAny(r, "/ \t") {
		return "", errdefs.InvalidParameter(fmt.Errorf("invalid registry %q: it must be a host[:port]", r))
	}
	switch r {
	case "index.docker.io", "registry-1.docker.io", "docker.io":
		return dockerHub, nil
	}
	if _, err := reference.ParseNormalizedNamed(r + "/x"); err != nil {
		return "", errdefs.InvalidParameter(fmt.Errorf("invalid registry %q: %w", r, err))
	}
	return r, nil
}

func (s *Service) setSearchList(add, block []string) error {
	s.blocked = map[string]bool{}
	seen := map[string]bool{}
	for _, r := range add {
		h, err := normalizeRegistry(r)
		if err != nil {
			return fmt.Errorf("add-registry: %w", err)
		}
		if !seen[h] {
			seen[h] = true
			s.added = append(s.added, h)
		}
	}
	for _, r := range block {
		if strings.TrimSpace(r) == blockAllRegistries {
			s.blockAll = true
			continue
		}
		h, err := normalizeRegistry(r)
		if err != nil {
			return fmt.Errorf("block-registry: %w", err)
		}
		if seen[h] {
			return errdefs.InvalidParameter(fmt.Errorf("registry %s is both added (add-registry) and blocked (block-registry)", h))
		}
		s.blocked[h] = true
	}
	return nil
}

// isBlocked says whether host is refused by the block list.
func (s *Service) isBlocked(host string) bool {
	if s.blocked[host] {
		return true
	}
	if !s.blockAll {
		return false
	}
	for _, a := range s.added {
		if a == host {
			return false
		}
	}
	return true
}

// checkBlocked is the error for a blocked registry: a 403 naming it.
func (s *Service) checkBlocked(host string) error {
	if s.isBlocked(host) {
		return errdefs.Forbidden(fmt.Errorf("registry %s is blocked by the daemon's configuration (block-registry)", host))
	}
	return nil
}

// searchList is where an unqualified name is looked for, in order: the
// added registries, then Docker Hub; blocked ones left out.
func (s *Service) searchList() []string {
	var out []string
	for _, h := range append(append([]string(nil), s.added...), dockerHub) {
		if !s.isBlocked(h) && !contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// SearchList is the image store's order for short names: the added
// registries, then Docker Hub, blocked or not (blocking is about talking
// to a registry, not about images already here); nil when no registry
// was added (Docker's behaviour).
func (s *Service) SearchList() []string {
	if len(s.added) == 0 {
		return nil
	}
	out := append([]string(nil), s.added...)
	if !contains(out, dockerHub) {
		out = append(out, dockerHub)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pullCandidates are the references a pull of named tries, in order. A
// name of another registry, or any name without a search list, is itself
// (refused when its registry is blocked); a Docker Hub name is tried on
// every registry of the search list, as "host/name" there (Docker Hub
// keeps its "library/"). Docker Hub names count as unqualified because
// Docker's client sends "fedora" as "docker.io/library/fedora": the
// daemon cannot tell the two apart.
func (s *Service) pullCandidates(named reference.Named) (cands []reference.Named, viaList bool, err error) {
	if len(s.added) == 0 || reference.Domain(named) != dockerHub {
		if err := s.checkBlocked(reference.Domain(named)); err != nil {
			return nil, false, err
		}
		return []reference.Named{named}, false, nil
	}
	list := s.searchList()
	if len(list) == 0 {
		return nil, false, errdefs.Forbidden(fmt.Errorf("every registry of the search list is blocked: cannot pull %s", reference.FamiliarString(named)))
	}
	var out []reference.Named
	for _, h := range list {
		q, err := qualifyName(h, named)
		if err != nil {
			return nil, false, err
		}
		out = append(out, q)
	}
	return out, true, nil
}

// qualifyName is Docker Hub's named on registry host: "fedora:34" is
// "host/fedora:34" (no "library/" outside Docker Hub).
func qualifyName(host string, named reference.Named) (reference.Named, error) {
	if host == dockerHub {
		return named, nil
	}
	q, err := reference.ParseNormalizedNamed(host + "/" + reference.FamiliarName(reference.TrimNamed(named)))
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %w", err))
	}
	if t, ok := named.(reference.Tagged); ok {
		q, err = reference.WithTag(q, t.Tag())
	}
	if d, ok := named.(reference.Digested); ok && err == nil {
		q, err = reference.WithDigest(q, d.Digest())
	}
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %w", err))
	}
	return q, nil
}

// authFor is the client's credentials for a candidate registry: only the
// registry they were given for gets them (for an unqualified name the
// client looked up Docker Hub's), so a search list never leaks a
// password to another registry.
func authFor(ac registry.AuthConfig, primary, host string) registry.AuthConfig {
	if host == primary {
		return ac
	}
	if ac.ServerAddress != "" {
		if h, err := loginHost(ac.ServerAddress); err == nil && h == host {
			return ac
		}
	}
	return registry.AuthConfig{}
}
