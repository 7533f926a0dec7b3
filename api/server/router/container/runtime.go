package container

import (
	"context"
	"net/http"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"

	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
)

// runtimeRoutes observe and change a container: pause, rename, update,
// top, stats, changes, prune.
func (c *containerRouter) runtimeRoutes() []router.Route {
	return []router.Route{
		{Method: http.MethodPost, Path: "/containers/{name:.*}/pause", Handler: c.pause},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/unpause", Handler: c.unpause},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/rename", Handler: c.rename},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/top", Handler: c.top},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/stats", Handler: c.stats},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/changes", Handler: c.changes},
		{Method: http.MethodPost, Path: "/containers/prune", Handler: c.prune},
	}
}

func (c *containerRouter) pause(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	if err := c.b.ContainerPause(ctx, vars["name"]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *containerRouter) unpause(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	if err := c.b.ContainerUnpause(ctx, vars["name"]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *containerRouter) rename(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := c.b.ContainerRename(ctx, vars["name"], r.FormValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// update is POST /containers/{name}/update.
func (c *containerRouter) update(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var cfg containertypes.UpdateConfig
	if err := httputils.ReadJSON(r, &cfg, true); err != nil {
		return err
	}
	if versions.LessThan(httputils.VersionFromContext(ctx), "1.40") {
		// PidsLimit could not be updated before API 1.40: ignored, as
		// Docker ignores it.
		cfg.PidsLimit = nil
	}
	resp, err := c.b.ContainerUpdate(ctx, vars["name"], &cfg)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, resp)
}

func (c *containerRouter) top(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	resp, err := c.b.ContainerTop(ctx, vars["name"], r.FormValue("ps_args"))
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, resp)
}

func (c *containerRouter) stats(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	stream := r.Form.Get("stream") == "" || httputils.BoolValue(r, "stream")
	oneShot := httputils.BoolValue(r, "one-shot")
	if !stream {
		w.Header().Set("Content-Type", "application/json")
	}
	if _, err := c.b.ContainerInspect(ctx, vars["name"], false); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return c.b.ContainerStats(ctx, vars["name"], stream, oneShot, flushWriter{w})
}

// flushWriter sends each stats object as it is written.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) { return f.w.Write(p) }

func (f flushWriter) Flush() {
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (c *containerRouter) changes(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	ch, err := c.b.ContainerChanges(ctx, vars["name"])
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, ch)
}

func (c *containerRouter) prune(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	rep, err := c.b.ContainersPrune(ctx, f)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, rep)
}
