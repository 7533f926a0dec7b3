// Package image routes /images/...
package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/pkg/streamformatter"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
)

type imageRouter struct{ b backend.Images }

// New returns the image router.
func New(b backend.Images) router.Router { return &imageRouter{b: b} }

func (i *imageRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodGet, Path: "/images/json", Handler: i.list},
		{Method: http.MethodGet, Path: "/images/get", Handler: i.saveMany},
		{Method: http.MethodGet, Path: "/images/{name:.*}/get", Handler: i.saveOne},
		{Method: http.MethodGet, Path: "/images/{name:.*}/json", Handler: i.inspect},
		{Method: http.MethodPost, Path: "/images/create", Handler: i.create, Body: router.BodyStream},
		{Method: http.MethodPost, Path: "/images/load", Handler: i.load, Body: router.BodyStream},
		{Method: http.MethodPost, Path: "/images/{name:.*}/tag", Handler: i.tag},
		{Method: http.MethodDelete, Path: "/images/{name:.*}", Handler: i.remove},
	}
}

func (i *imageRouter) list(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	if name := r.FormValue("filter"); name != "" {
		f.Add("reference", name)
	}
	list, err := i.b.ImageList(ctx, httputils.BoolValue(r, "all"), f)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, list)
}

func (i *imageRouter) inspect(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var want *ocispec.Platform
	// ?platform= (JSON) came with API 1.49.
	if s := r.Form.Get("platform"); s != "" && versions.GreaterThanOrEqualTo(httputils.VersionFromContext(ctx), "1.49") {
		p, err := platform.Decode(s)
		if err != nil {
			return err
		}
		want = &p
	}
	img, err := i.b.ImageInspect(ctx, vars["name"], want)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, img)
}

func (i *imageRouter) tag(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := i.b.ImageTag(ctx, vars["name"], r.FormValue("repo"), r.FormValue("tag")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (i *imageRouter) remove(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	resp, err := i.b.ImageDelete(ctx, vars["name"], httputils.BoolValue(r, "force"), !httputils.BoolValue(r, "noprune"))
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, resp)
}

// create is POST /images/create: an import (fromSrc) here; a pull
// (fromImage) in pull.go.
func (i *imageRouter) create(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	// The platform is read first, for a pull as for an import: one that is
	// no platform is a 400 whatever else the request asks.
	var plat ocispec.Platform
	if s := r.FormValue("platform"); s != "" {
		p, err := platform.Parse(s)
		if err != nil {
			return err
		}
		plat = p
	}
	src := r.FormValue("fromSrc")
	if src == "" {
		if r.FormValue("fromImage") != "" {
			return i.pull(ctx, w, r)
		}
		return errdefs.InvalidParameter(fmt.Errorf("fromSrc or fromImage is required"))
	}
	if src != "-" {
		return errdefs.NotImplemented(fmt.Errorf("import from a URL is not implemented by this engine yet: use `docker import FILE` or stdin"))
	}
	p := backend.ImportParams{
		Repo:     r.FormValue("repo"),
		Tag:      r.FormValue("tag"),
		Message:  r.FormValue("message"),
		Changes:  r.Form["changes"],
		Platform: plat,
	}
	return progress(w, func(out io.Writer) error { return i.b.ImageImport(ctx, r.Body, p, out) })
}

func (i *imageRouter) load(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	quiet := httputils.BoolValue(r, "quiet")
	return progress(w, func(out io.Writer) error { return i.b.ImageLoad(ctx, r.Body, quiet, out) })
}

// progress runs an import or a load that reports on a JSON progress
// stream. Both read the request body to its end before they write (as
// Docker's do), so the response waits for the work: a client that goes
// on without reading it finds the image there, and an error before the
// first message is the response's status (a refused platform is a 400).
// An error after it travels in the stream, as Docker sends it.
func progress(w http.ResponseWriter, run func(out io.Writer) error) error {
	w.Header().Set("Content-Type", "application/json")
	out := &lazyHeaderWriter{w: w, flush: true}
	if err := run(out); err != nil {
		if !out.started {
			return err
		}
		_, _ = out.Write(streamformatter.FormatError(err))
	}
	return nil
}

func (i *imageRouter) saveOne(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	return i.save(ctx, w, r, []string{vars["name"]})
}

func (i *imageRouter) saveMany(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	return i.save(ctx, w, r, r.Form["names"])
}

func (i *imageRouter) save(ctx context.Context, w http.ResponseWriter, r *http.Request, names []string) error {
	if len(names) == 0 {
		return errdefs.InvalidParameter(fmt.Errorf("no image names given"))
	}
	var want *ocispec.Platform
	// ?platform= (JSON) came with API 1.48; Docker takes one at most.
	if versions.GreaterThanOrEqualTo(httputils.VersionFromContext(ctx), "1.48") {
		switch ps := r.Form["platform"]; {
		case len(ps) > 1:
			return errdefs.InvalidParameter(errors.New("multiple platform parameters not supported"))
		case len(ps) == 1:
			p, err := platform.Decode(ps[0])
			if err != nil {
				return err
			}
			want = &p
		}
	}
	w.Header().Set("Content-Type", "application/x-tar")
	return i.b.ImageSave(ctx, names, want, &lazyHeaderWriter{w: w})
}

// lazyHeaderWriter leaves the status unsent until the first byte, so that
// a request that fails before writing (no such image) still gets its
// status. With flush, each write goes to the client at once (progress
// messages).
type lazyHeaderWriter struct {
	w       http.ResponseWriter
	flush   bool
	started bool
}

func (l *lazyHeaderWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.WriteHeader(http.StatusOK)
	}
	n, err := l.w.Write(p)
	if l.flush {
		if fl, ok := l.w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	return n, err
}
