// Package volume routes /volumes/...
package volume

import (
	"context"
	"net/http"

	"github.com/docker/docker/api/types/versions"
	volumetypes "github.com/docker/docker/api/types/volume"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
)

type volumeRouter struct{ b backend.Volumes }

// New returns the volume router.
func New(b backend.Volumes) router.Router { return volumeRouter{b: b} }

func (v volumeRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodGet, Path: "/volumes", Handler: v.list},
		{Method: http.MethodPost, Path: "/volumes/create", Handler: v.create},
		{Method: http.MethodPost, Path: "/volumes/prune", Handler: v.prune},
		{Method: http.MethodGet, Path: "/volumes/{name:.*}", Handler: v.inspect},
		{Method: http.MethodDelete, Path: "/volumes/{name:.*}", Handler: v.remove},
	}
}

func (v volumeRouter) list(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	resp, err := v.b.VolumeList(ctx, f)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, resp)
}

// create makes a volume; an empty body (or no name) makes an anonymous
// one, as in Docker.
func (v volumeRouter) create(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var req volumetypes.CreateOptions
	if err := httputils.ReadJSON(r, &req, true); err != nil {
		return err
	}
	vol, err := v.b.VolumeCreate(ctx, req)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusCreated, vol)
}

func (v volumeRouter) inspect(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	vol, err := v.b.VolumeInspect(ctx, vars["name"])
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, vol)
}

func (v volumeRouter) remove(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := v.b.VolumeRemove(ctx, vars["name"], httputils.BoolValue(r, "force")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// prune removes unused volumes: before API 1.42 every unused volume, from
// it only anonymous ones unless the "all" filter says otherwise.
func (v volumeRouter) prune(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	version := httputils.VersionFromContext(ctx)
	all := version != "" && versions.LessThan(version, "1.42")
	report, err := v.b.VolumesPrune(ctx, f, all)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, report)
}
