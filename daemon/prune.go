package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/filters"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/pkg/errdefs"
)

var imagePruneFilters = map[string]bool{"dangling": true, "label": true, "label!": true, "until": true}

// imagePruneRunning refuses a second prune while one runs, as Docker
// does; one daemon runs per process.
var imagePruneRunning atomic.Bool

// ImagesPrune serves `docker image prune`: without dangling=false only
// untagged images no other image is built on; with it every image no
// container uses. Images a container uses (running or not) stay. The
// untagged parents a removal leaves without children go too, as rmi's
// do, and every layer no image holds any more is removed with them.
func (d *Daemon) ImagesPrune(ctx context.Context, f filters.Args) (*imagetypes.PruneReport, error) {
	if !imagePruneRunning.CompareAndSwap(false, true) {
		return nil, errdefs.Conflict(errors.New("a prune operation is already running"))
	}
	defer imagePruneRunning.Store(false)
	if err := f.Validate(imagePruneFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	danglingOnly, err := f.GetBoolOrDefault("dangling", true)
	if err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	var until time.Time
	if u := f.Get("until"); len(u) > 1 {
		return nil, errdefs.InvalidParameter(errors.New("more than one until filter specified"))
	} else if len(u) == 1 {
		if until, err = parseUntil(u[0]); err != nil {
			return nil, err
		}
	}

	usage := d.images.Usage()
	imgs := d.images.List()
	hasChild := map[digest.Digest]bool{}
	for _, img := range imgs {
		if p := d.images.Parent(img.ID); p != "" {
			hasChild[p] = true
		}
	}
	rep := &imagetypes.PruneReport{ImagesDeleted: []imagetypes.DeleteResponse{}}
	for _, img := range imgs {
		if err := ctx.Err(); err != nil {
			break // report what was freed so far
		}
		refs := len(img.RepoTags) + len(img.RepoDigests)
		switch {
		case hasChild[img.ID] && (danglingOnly || refs == 0):
			continue // an intermediate image goes with its child
		case danglingOnly && len(img.RepoTags) > 0:
			continue
		case !until.IsZero() && img.Created.After(until):
			continue
		case !matchPruneLabels(f, img.Config.Config.Labels):
			continue
		}
		rep.ImagesDeleted = append(rep.ImagesDeleted, d.removeImage(ctx, img)...)
	}
	for _, r := range rep.ImagesDeleted {
		if r.Deleted != "" {
			rep.SpaceReclaimed += uint64(usage.LayerSize[digest.Digest(r.Deleted)])
		}
	}
	// Layers no image holds (what an interrupted pull left) go too.
	rep.SpaceReclaimed += uint64(d.images.PruneLayers())
	slog.Info("image prune", "deleted", len(rep.ImagesDeleted), "reclaimed", rep.SpaceReclaimed)
	return rep, nil
}

// removeImage removes every reference of img (the image with the last
// one), then the untagged parents that leaves childless; what a
// container uses, or what changed meanwhile, is left and logged.
func (d *Daemon) removeImage(ctx context.Context, img *image.Image) []imagetypes.DeleteResponse {
	parent := d.images.Parent(img.ID)
	var out []imagetypes.DeleteResponse
	refs := append(append([]string{}, img.RepoTags...), img.RepoDigests...)
	if len(refs) == 0 {
		refs = []string{img.ID.String()}
	}
	for _, ref := range refs {
		resp, err := d.ImageDelete(ctx, ref, false, false)
		if err != nil {
			if !errdefs.IsConflict(err) && !errdefs.IsNotFound(err) {
				slog.Warn("image prune: cannot remove", "ref", ref, "err", err)
			}
			return out
		}
		out = append(out, resp...)
	}
	return append(out, d.pruneParents(ctx, parent)...)
}

// pruneParents removes id and its ancestors while each is untagged, has
// no other child and no container uses it (Docker's PruneChildren).
func (d *Daemon) pruneParents(ctx context.Context, id digest.Digest) []imagetypes.DeleteResponse {
	var out []imagetypes.DeleteResponse
	for id != "" {
		img, err := d.images.Get(id.String())
		if err != nil || len(img.RepoTags) > 0 || len(img.RepoDigests) > 0 || len(d.images.Children(id)) > 0 || d.imageUsers(id) > 0 {
			return out
		}
		next := d.images.Parent(id)
		resp, err := d.images.Delete(id.String(), false, func(id digest.Digest) bool { return d.imageUsers(id) > 0 })
		if err != nil {
			return out
		}
		out = append(out, resp...)
		id = next
	}
	return out
}

// matchPruneLabels applies label (all must match) and label! (none may).
func matchPruneLabels(f filters.Args, labels map[string]string) bool {
	if !f.MatchKVList("label", labels) {
		return false
	}
	return !f.Contains("label!") || !f.MatchKVList("label!", labels)
}

// SystemDiskUsage serves `docker system df`. Images are counted as
// Docker counts them (Size, SharedSize, Containers); containers carry
// their writable layer's size; volumes and the build cache are empty
// lists (this engine keeps no build cache apart from images).
func (d *Daemon) SystemDiskUsage(ctx context.Context, opts backend.DiskUsageOptions) (*types.DiskUsage, error) {
	du := &types.DiskUsage{}
	if opts.Images {
		usage := d.images.Usage()
		list, err := d.ImageList(ctx, false, filters.NewArgs())
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			s.SharedSize = usage.SharedSize(digest.Digest(s.ID))
		}
		du.Images = list
		du.LayersSize = usage.TotalLayers()
	}
	if opts.Containers {
		list, err := d.ContainerList(ctx, backend.ListOptions{All: true})
		if err != nil {
			return nil, fmt.Errorf("disk usage: %w", err)
		}
		for _, c := range list {
			if n, err := d.images.RWLayerSize(c.ID); err == nil {
				c.SizeRw = n
				if img, err := d.images.Get(c.ImageID); err == nil {
					c.SizeRootFs = n + img.Size
				}
			}
		}
		du.Containers = list
	}
	if opts.Volumes {
		vs, err := d.VolumesUsage(ctx)
		if err != nil {
			return nil, err
		}
		du.Volumes = vs
	}
	return du, nil
}
