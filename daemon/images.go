package daemon

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/filters"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/runconfig"
)

var imageFilters = map[string]bool{
	"reference": true, "dangling": true, "label": true, "before": true, "since": true, "until": true,
}

// listFilter is an image list's (or prune's) filters, decoded once.
type listFilter struct {
	f             filters.Args
	dangling      bool // dangling=true
	before, since time.Time
}

func (d *Daemon) newListFilter(f filters.Args) (*listFilter, error) {
	if err := f.Validate(imageFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	lf := &listFilter{f: f}
	var err error
	if lf.dangling, err = f.GetBoolOrDefault("dangling", false); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	// Several values narrow: before (and until) the oldest of them,
	// since the newest.
	for _, v := range f.Get("before") {
		img, err := d.images.Get(v)
		if err != nil {
			return nil, err
		}
		if lf.before.IsZero() || img.Created.Before(lf.before) {
			lf.before = img.Created
		}
	}
	for _, v := range f.Get("until") {
		ts, err := parseUntil(v)
		if err != nil {
			return nil, err
		}
		if lf.before.IsZero() || ts.Before(lf.before) {
			lf.before = ts
		}
	}
	for _, v := range f.Get("since") {
		img, err := d.images.Get(v)
		if err != nil {
			return nil, err
		}
		if img.Created.After(lf.since) {
			lf.since = img.Created
		}
	}
	return lf, nil
}

// matchTimeAndLabels applies the filters that do not depend on names.
func (lf *listFilter) matchTimeAndLabels(img *image.Image) bool {
	if !lf.before.IsZero() && !img.Created.Before(lf.before) {
		return false
	}
	if !lf.since.IsZero() && !img.Created.After(lf.since) {
		return false
	}
	if lf.f.Contains("label") && !lf.f.MatchKVList("label", img.Config.Config.Labels) {
		return false
	}
	return true
}

// ImageList serves `docker images`. Without all, untagged images that
// are the parents of others (a build's intermediate steps) are hidden.
func (d *Daemon) ImageList(ctx context.Context, all bool, f filters.Args) ([]*imagetypes.Summary, error) {
	lf, err := d.newListFilter(f)
	if err != nil {
		return nil, err
	}
	imgs := d.images.List()
	var hasChild map[digest.Digest]bool
	if !all {
		hasChild = map[digest.Digest]bool{}
		for _, img := range imgs {
			if p := d.images.Parent(img.ID); p != "" {
				hasChild[p] = true
			}
		}
	}
	out := []*imagetypes.Summary{}
	for _, img := range imgs {
		if !lf.matchTimeAndLabels(img) {
			continue
		}
		s := d.images.Summary(img)
		if f.Contains("reference") {
			s.RepoTags = matchingRefs(f, img.RepoTags)
			s.RepoDigests = matchingRefs(f, img.RepoDigests)
			if len(s.RepoTags) == 0 && len(s.RepoDigests) == 0 {
				continue
			}
		}
		untagged := len(img.RepoTags) == 0 && len(img.RepoDigests) == 0
		switch {
		case untagged && !all && hasChild[img.ID]:
			continue
		case untagged && f.Contains("dangling") && !lf.dangling:
			continue // dangling=false
		case lf.dangling && len(img.RepoTags) > 0:
			continue
		}
		s.Containers = int64(d.imageUsers(img.ID))
		out = append(out, &s)
	}
	return out, nil
}

// matchingRefs keeps the references that a reference filter names, as
// Docker matches them: a shell pattern against the familiar reference
// ("busybox:latest") or its familiar name ("busybox").
func matchingRefs(f filters.Args, refs []string) []string {
	keep := []string{}
	for _, t := range refs {
		named, err := reference.ParseNormalizedNamed(t)
		if err != nil {
			continue
		}
		for _, pattern := range f.Get("reference") {
			if ok, err := reference.FamiliarMatch(pattern, named); err == nil && ok {
				keep = append(keep, t)
				break
			}
		}
	}
	return keep
}

func (d *Daemon) imageUsers(id digest.Digest) int {
	n := 0
	for _, c := range d.containers.List() {
		c.Lock()
		if c.ImageID == id.String() || mountsImage(c, id.String()) {
			n++
		}
		c.Unlock()
	}
	return n
}

// ImageInspect serves `docker image inspect`. With a platform, an image
// of another platform is not found (an image here has only one).
func (d *Daemon) ImageInspect(ctx context.Context, ref string, want *ocispec.Platform) (*imagetypes.InspectResponse, error) {
	img, err := d.images.Get(ref)
	if err != nil {
		return nil, err
	}
	if want != nil {
		if err := checkPlatform(ref, img.Config.Platform, *want); err != nil {
			return nil, err
		}
	}
	resp := d.images.InspectImage(img)
	return &resp, nil
}

// ImageTag serves `docker tag`.
func (d *Daemon) ImageTag(ctx context.Context, source, repo, tag string) error {
	if repo == "" {
		return errdefs.InvalidParameter(fmt.Errorf("repository name must have at least one component"))
	}
	ref := repo
	if tag != "" {
		ref += ":" + tag
	}
	return d.images.Tag(source, ref)
}

// ImageDelete serves `docker rmi`.
// Unless noprune, the untagged parents the removal leaves without a
// child (a build's intermediate images) go too, as in Docker.
func (d *Daemon) ImageDelete(ctx context.Context, ref string, force, prune bool) ([]imagetypes.DeleteResponse, error) {
	var id, parent digest.Digest
	if prune {
		if img, err := d.images.Get(ref); err == nil {
			id, parent = img.ID, d.images.Parent(img.ID)
		}
	}
	resp, err := d.images.Delete(ref, force, func(id digest.Digest) bool { return d.imageUsers(id) > 0 })
	if err != nil || parent == "" {
		return resp, err
	}
	for _, r := range resp {
		if r.Deleted == id.String() {
			return append(resp, d.pruneParents(ctx, parent)...), nil
		}
	}
	return resp, nil
}

// ImageImport serves `docker import`: a rootfs tar becomes a one-layer image.
func (d *Daemon) ImageImport(ctx context.Context, src io.Reader, p backend.ImportParams, out io.Writer) error {
	var cfg ocispec.ImageConfig
	if err := runconfig.ApplyChanges(&cfg, p.Changes); err != nil {
		return err
	}
	opts := image.ImportOptions{Config: cfg, Comment: p.Message, Platform: p.Platform}
	ref := p.Repo
	if ref != "" && p.Tag != "" {
		ref += ":" + p.Tag
	}
	// No progress while the tar is read, as Docker has it for an import
	// from the request body: out is written once the image exists, so that
	// an error before that is the response's status.
	img, err := d.images.Import(ctx, src, ref, opts, nil)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "{\"status\":%q}\r\n", img.ID.String())
	return err
}

// ImageLoad serves `docker load`.
func (d *Daemon) ImageLoad(ctx context.Context, src io.Reader, quiet bool, out io.Writer) error {
	_, err := d.images.LoadWithProgress(ctx, src, out, quiet)
	return err
}

// ImageSave serves `docker save`. With a platform, every image named
// must be of it (an image here has only one platform to pick).
func (d *Daemon) ImageSave(ctx context.Context, names []string, want *ocispec.Platform, out io.Writer) error {
	if want != nil {
		for _, name := range names {
			img, err := d.images.Get(name)
			if err != nil {
				return err
			}
			if err := checkPlatform(name, img.Config.Platform, *want); err != nil {
				return err
			}
		}
	}
	return d.images.Save(ctx, names, out)
}
