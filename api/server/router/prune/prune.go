// Package prune routes POST /images/prune and GET /system/df: what
// counts and frees the space images take.
package prune

import (
	"context"
	"fmt"
	"net/http"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/versions"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
)

type pruneRouter struct{ b backend.Prune }

// New returns the router.
func New(b backend.Prune) router.Router { return &pruneRouter{b: b} }

func (p *pruneRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodPost, Path: "/images/prune", Handler: p.imagesPrune},
		{Method: http.MethodGet, Path: "/system/df", Handler: p.diskUsage},
	}
}

func (p *pruneRouter) imagesPrune(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	rep, err := p.b.ImagesPrune(ctx, f)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, rep)
}

// diskUsage: ?type= (repeatable, API 1.42) picks the parts; none is all.
func (p *pruneRouter) diskUsage(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var opts backend.DiskUsageOptions
	types := r.Form["type"]
	if len(types) == 0 || versions.LessThan(httputils.VersionFromContext(ctx), "1.42") {
		opts = backend.DiskUsageOptions{Containers: true, Images: true, Volumes: true, BuildCache: true}
	}
	for _, t := range types {
		switch t {
		case "container":
			opts.Containers = true
		case "image":
			opts.Images = true
		case "volume":
			opts.Volumes = true
		case "build-cache":
			opts.BuildCache = true
		default:
			return errdefs.InvalidParameter(fmt.Errorf("unknown object type: %s", t))
		}
	}
	du, err := p.b.SystemDiskUsage(ctx, opts)
	if err != nil {
		return err
	}
	if opts.BuildCache {
		du.BuildCache = []*build.CacheRecord{}
	}
	return httputils.WriteJSON(w, http.StatusOK, du)
}
