package distribution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/sdengine/engine/pkg/errdefs"
)

// SearchOptions is a decoded GET /images/search.
type SearchOptions struct {
	Term    string
	Limit   int // 0: Docker's default, 25
	Filters filters.Args
	Auth    registry.AuthConfig
}

const (
	defaultSearchLimit = 25
	// catalogPage is how many repositories one /v2/_catalog request asks
	// for (the distribution registry's own maximum is 1000).
	catalogPage = 100
	// maxCatalogPages bounds a catalog walk: a search must end even on
	// a registry with a huge (or endlessly paginating) catalog.
	maxCatalogPages = 1000
)

var searchFilters = map[string]bool{"is-automated": true, "is-official": true, "stars": true}

// Search serves `docker search` as Docker does: the filters and limit
// are checked first; then the registry the term names (Docker Hub when
// it names none, or every registry of the search list) is asked through
// its v1 search endpoint, or, for a registry without one (the
// distribution registry), its v2 catalog filtered by the term.
func (s *Service) Search(ctx context.Context, o SearchOptions) ([]registry.SearchResult, error) {
	if err := o.Filters.Validate(searchFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	isAutomated, err := o.Filters.GetBoolOrDefault("is-automated", false)
	if err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	isOfficial, err := o.Filters.GetBoolOrDefault("is-official", false)
	if err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	minStars := 0
	for _, v := range o.Filters.Get("stars") {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid filter 'stars=%s': %w", v, err))
		}
		minStars = max(minStars, n)
	}
	limit := o.Limit
	if limit == 0 {
		limit = defaultSearchLimit
	}
	if limit < 1 || limit > 100 {
		return nil, errdefs.InvalidParameter(fmt.Errorf("limit %d is outside the range of [1, 100]", limit))
	}
	if strings.Contains(o.Term, "://") {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid repository name: repository name (%s) should not have a scheme", o.Term))
	}
	// Docker: "is-automated" is deprecated; asking for automated builds
	// finds none.
	if isAutomated {
		return []registry.SearchResult{}, nil
	}

	hosts, term := s.searchHosts(o.Term)
	if len(hosts) == 0 {
		return nil, errdefs.Forbidden(fmt.Errorf("every registry of the search list is blocked: cannot search %s", o.Term))
	}
	var all []registry.SearchResult
	var lastErr error
	for _, host := range hosts {
		if err := s.checkBlocked(host); err != nil {
			return nil, err
		}
		res, err := s.searchOne(ctx, host, term, limit, o.Auth)
		if err != nil {
			if len(hosts) == 1 {
				return nil, err
			}
			// With a search list one registry's failure does not hide
			// the others' results (as Red Hat's docker did).
			slog.Warn("search: registry failed", "registry", host, "err", err)
			lastErr = err
			continue
		}
		all = append(all, res...)
	}
	if all == nil && lastErr != nil {
		return nil, lastErr
	}

	out := []registry.SearchResult{}
	for _, r := range all {
		if o.Filters.Contains("is-official") && r.IsOfficial != isOfficial {
			continue
		}
		if o.Filters.Contains("stars") && r.StarCount < minStars {
			continue
		}
		// Docker forces it false: Docker Hub's value is not to be trusted.
		//lint:ignore SA1019 the deprecated field is cleared, as Docker does
		r.IsAutomated = false
		out = append(out, r)
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// searchHosts splits a search term as Docker does: "host/term" names a
// registry when its first part looks like a host (a dot, a port, or
// localhost); anything else is Docker Hub's, or the search list's when
// one is configured.
func (s *Service) searchHosts(term string) ([]string, string) {
	parts := strings.SplitN(term, "/", 2)
	if len(parts) == 2 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		host := parts[0]
		if host == "index.docker.io" || host == "registry-1.docker.io" {
			host = dockerHub
		}
		return []string{host}, parts[1]
	}
	return s.searchList(), term
}

// searchOne asks one registry: its v1 search endpoint, else its catalog.
func (s *Service) searchOne(ctx context.Context, host, term string, limit int, ac registry.AuthConfig) ([]registry.SearchResult, error) {
	if host == dockerHub {
		// Docker Hub's index has the v1 search; its registry has no catalog.
		term = strings.TrimPrefix(term, "library/")
		return s.searchV1(ctx, host, term, limit, ac)
	}
	res, v1err := s.searchV1(ctx, host, term, limit, ac)
	if v1err == nil {
		qualify(host, res)
		return res, nil
	}
	if errdefs.ClassOf(v1err) == errdefs.ClassUnauthorized {
		return nil, v1err
	}
	slog.Debug("search: no v1 search endpoint, trying the catalog", "registry", host, "err", v1err)
	res, err := s.searchCatalog(ctx, host, term, limit, ac)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) {
			switch {
			case te.StatusCode == http.StatusUnauthorized || hasCode(te, transport.UnauthorizedErrorCode):
				return nil, errdefs.Unauthorized(errors.New(registryCause(te)))
			case te.StatusCode == http.StatusNotFound || te.StatusCode == http.StatusMethodNotAllowed ||
				te.StatusCode == http.StatusNotImplemented || hasCode(te, transport.UnsupportedErrorCode):
				return nil, errdefs.NotFound(fmt.Errorf("registry %s does not support search: it offers neither the v1 search endpoint (%v) nor the v2 catalog (%s)",
					host, v1err, registryCause(te)))
			}
		}
		return nil, fmt.Errorf("search %s: %w", host, err)
	}
	return res, nil
}

// qualify prefixes the registry's host to names that lack it, so that a
// result can be pulled as shown, and two registries' results differ.
func qualify(host string, res []registry.SearchResult) {
	for i := range res {
		if !strings.HasPrefix(res[i].Name, host+"/") {
			res[i].Name = host + "/" + res[i].Name
		}
	}
}

// searchV1 is GET /v1/search?q=TERM&n=LIMIT on the registry's index
// (index.docker.io for Docker Hub): https, or for an insecure registry
// https then plain http. Basic credentials are sent when the client gave
// some, as Docker's v1 client does.
func (s *Service) searchV1(ctx context.Context, host, term string, limit int, ac registry.AuthConfig) ([]registry.SearchResult, error) {
	index := host
	if host == dockerHub {
		index = "index.docker.io"
	}
	schemes := []string{"https"}
	if s.isInsecure(host) {
		schemes = append(schemes, "http")
	}
	client := &http.Client{Transport: s.transportFor(host)}
	var lastErr error
	for _, scheme := range schemes {
		u := scheme + "://" + index + "/v1/search?q=" + url.QueryEscape(term) + "&n=" + strconv.Itoa(limit)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("error building request: %w", err))
		}
		req.Header.Set("User-Agent", userAgent)
		if user, pass := basicCredentials(ac); user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			lastErr = err
			continue
		}
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusUnauthorized:
			if user, _ := basicCredentials(ac); user != "" {
				return nil, errdefs.Unauthorized(errors.New("unauthorized: incorrect username or password"))
			}
			return nil, fmt.Errorf("%s: unexpected status code %d", u, resp.StatusCode)
		default:
			return nil, fmt.Errorf("%s: unexpected status code %d", u, resp.StatusCode)
		}
		var res registry.SearchResults
		if err := json.Unmarshal(body, &res); err != nil {
			return nil, fmt.Errorf("error decoding registry search results from %s: %w", u, err)
		}
		if res.Results == nil {
			res.Results = []registry.SearchResult{}
		}
		return res.Results, nil
	}
	return nil, fmt.Errorf("search %s: %w", host, lastErr)
}

// basicCredentials are ac's user name and password, from Auth when only
// that is given (base64 "user:pass", as the CLI's config file keeps it).
func basicCredentials(ac registry.AuthConfig) (string, string) {
	if ac.Username != "" {
		return ac.Username, ac.Password
	}
	if ac.Auth != "" {
		cfg, err := authenticator(ac, endpoint{}).Authorization()
		if err == nil && cfg.Username != "" {
			return cfg.Username, cfg.Password
		}
	}
	return "", ""
}

// searchCatalog walks the registry's /v2/_catalog (paginated, with the
// registry's auth: basic or a token for registry:catalog:*) and keeps the
// repositories whose name contains term, case-insensitively, as Docker
// Hub's search matches. Results are host-qualified, so they can be
// pulled as shown.
func (s *Service) searchCatalog(ctx context.Context, host, term string, limit int, ac registry.AuthConfig) ([]registry.SearchResult, error) {
	reg, err := s.registryFor(host)
	if err != nil {
		return nil, err
	}
	opts := s.remoteOptions(ctx, endpoint{host: host}, ac)
	want := strings.ToLower(term)
	out := []registry.SearchResult{}
	last := ""
	for page := 0; page < maxCatalogPages; page++ {
		repos, err := remote.CatalogPage(reg, last, catalogPage, opts...)
		if err != nil {
			return nil, err
		}
		for _, r := range repos {
			if strings.Contains(strings.ToLower(r), want) {
				out = append(out, registry.SearchResult{Name: host + "/" + r})
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(repos) < catalogPage || repos[len(repos)-1] == last {
			return out, nil
		}
		last = repos[len(repos)-1]
	}
	slog.Warn("search: catalog walk stopped after its page limit", "registry", host, "pages", maxCatalogPages)
	return out, nil
}
