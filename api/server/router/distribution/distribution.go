// Package distribution routes what talks to registries: POST
// /images/{name}/push, POST /auth and GET /images/search (a pull is POST /images/create, in
// the image router).
package distribution

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/pkg/streamformatter"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
)

type distributionRouter struct{ b backend.Distribution }

// New returns the router.
func New(b backend.Distribution) router.Router { return &distributionRouter{b: b} }

func (d *distributionRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodPost, Path: "/images/{name:.*}/push", Handler: d.push},
		{Method: http.MethodPost, Path: "/auth", Handler: d.auth},
		{Method: http.MethodGet, Path: "/images/search", Handler: d.search},
	}
}

// search is GET /images/search?term=&limit=&filters=. As in Docker, a
// negative or non-numeric limit is a 400 here; its range is the
// backend's to check.
func (d *distributionRouter) search(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	p := backend.SearchParams{Term: r.FormValue("term"), Auth: DecodeAuth(r.Header.Get("X-Registry-Auth"))}
	if v := r.FormValue("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errdefs.InvalidParameter(fmt.Errorf("invalid limit specified: %q", v))
		}
		p.Limit = n
	}
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	p.Filters = f
	res, err := d.b.ImageSearch(ctx, p)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, res)
}

func (d *distributionRouter) push(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	p := backend.PushParams{Name: vars["name"], Tag: r.FormValue("tag"), Auth: DecodeAuth(r.Header.Get("X-Registry-Auth"))}
	return Stream(w, func(out *ProgressWriter) error { return d.b.ImagePush(ctx, p, out) })
}

func (d *distributionRouter) auth(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var ac registry.AuthConfig
	if err := json.NewDecoder(r.Body).Decode(&ac); err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid login request: %w", err))
	}
	resp, err := d.b.AuthLogin(ctx, ac)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, resp)
}

// DecodeAuth decodes X-Registry-Auth (base64url JSON of an AuthConfig).
// As in Docker, a header that does not decode is anonymous, not an error:
// the registry decides whether that is enough.
func DecodeAuth(h string) registry.AuthConfig {
	ac, err := registry.DecodeAuthConfig(h)
	if err != nil || ac == nil {
		return registry.AuthConfig{}
	}
	return *ac
}

// ProgressWriter sends the response's headers with its first message, so
// that an operation failing before it says anything (no such repository,
// bad credentials) still answers with its own status code, as Docker's.
type ProgressWriter struct {
	w       http.ResponseWriter
	started bool
}

func (p *ProgressWriter) Write(b []byte) (int, error) {
	if !p.started {
		p.started = true
		p.w.Header().Set("Content-Type", "application/json")
		p.w.WriteHeader(http.StatusOK)
	}
	n, err := p.w.Write(b)
	if fl, ok := p.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// Stream runs op with a ProgressWriter: an error before any output is the
// response's status; after, it travels in the stream, as Docker does.
func Stream(w http.ResponseWriter, op func(out *ProgressWriter) error) error {
	out := &ProgressWriter{w: w}
	err := op(out)
	if err == nil {
		if !out.started {
			out.Write(nil)
		}
		return nil
	}
	if !out.started {
		return err
	}
	_, _ = out.Write(streamformatter.FormatError(err))
	return nil
}
