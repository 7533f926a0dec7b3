// Package image routes /images/...
package image

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/docker/docker/pkg/streamformatter"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
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

func (i *imageRouter) inspect(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	img, err := i.b.ImageInspect(ctx, vars["name"])
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
		Platform: r.FormValue("platform"),
	}
	startProgress(w)
	out := flushWriter{w}
	if err := i.b.ImageImport(ctx, r.Body, p, out); err != nil {
		// Headers are gone: the error travels in the progress stream, as Docker does.
		_, _ = out.Write(streamformatter.FormatError(err))
	}
	return nil
}

func (i *imageRouter) load(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	quiet := httputils.BoolValue(r, "quiet")
	startProgress(w)
	out := flushWriter{w}
	if err := i.b.ImageLoad(ctx, r.Body, quiet, out); err != nil {
		_, _ = out.Write(streamformatter.FormatError(err))
	}
	return nil
}

func (i *imageRouter) saveOne(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	return i.save(ctx, w, []string{vars["name"]})
}

func (i *imageRouter) saveMany(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	return i.save(ctx, w, r.Form["names"])
}

func (i *imageRouter) save(ctx context.Context, w http.ResponseWriter, names []string) error {
	if len(names) == 0 {
		return errdefs.InvalidParameter(fmt.Errorf("no image names given"))
	}
	w.Header().Set("Content-Type", "application/x-tar")
	return i.b.ImageSave(ctx, names, &lazyHeaderWriter{w: w})
}

// startProgress sends the headers of a progress stream. The request body
// (the tar) is still being read while progress goes out, which net/http
// allows only in full-duplex mode.
func startProgress(w http.ResponseWriter) {
	if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
		slog.Debug("full duplex not available", "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
}

// flushWriter pushes each progress message to the client at once.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// lazyHeaderWriter leaves the status unsent until the first byte, so that
// a save that fails before writing (no such image) still gets its 404.
type lazyHeaderWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyHeaderWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(p)
}
