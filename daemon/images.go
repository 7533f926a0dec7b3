package daemon

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/docker/docker/api/types/filters"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/runconfig"
)

var imageFilters = map[string]bool{"reference": true, "dangling": true, "label": true}

// ImageList serves `docker images`.
func (d *Daemon) ImageList(ctx context.Context, all bool, f filters.Args) ([]*imagetypes.Summary, error) {
	if err := f.Validate(imageFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	out := []*imagetypes.Summary{}
	for _, img := range d.images.List() {
		if f.Contains("dangling") {
			dangling := len(img.RepoTags) == 0
			if f.ExactMatch("dangling", "true") != dangling {
				continue
			}
		}
		if f.Contains("label") && !f.MatchKVList("label", img.Config.Config.Labels) {
			continue
		}
		s := d.images.Summary(img)
		if f.Contains("reference") {
			s.RepoTags = matchingRefs(f, img.RepoTags)
			if len(s.RepoTags) == 0 {
				continue
			}
		}
		s.Containers = int64(d.imageUsers(img.ID))
		out = append(out, &s)
	}
	return out, nil
}

// matchingRefs keeps the tags that a reference filter names, by whole
// reference, by repository, or by a shell pattern.
func matchingRefs(f filters.Args, tags []string) []string {
	var keep []string
	for _, t := range tags {
		repo := t
		if i := strings.LastIndex(t, ":"); i > strings.LastIndex(t, "/") {
			repo = t[:i]
		}
		for _, pattern := range f.Get("reference") {
			if pattern == t || pattern == repo || globMatch(pattern, t) || globMatch(pattern, repo) {
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
		if c.ImageID == id.String() {
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
func (d *Daemon) ImageDelete(ctx context.Context, ref string, force, prune bool) ([]imagetypes.DeleteResponse, error) {
	return d.images.Delete(ref, force, func(id digest.Digest) bool { return d.imageUsers(id) > 0 })
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
	_, err := d.images.Load(ctx, src, out)
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
