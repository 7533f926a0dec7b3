package image

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	eventtypes "github.com/docker/docker/api/types/events"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Delete removes a tag or an image with docker's rules:
//   - by tag: the tag goes; the image goes too when that was its last tag
//     and no container uses it (a used image needs force, and then only
//     loses the tag);
//   - by ID: an image with several tags needs force; an image used by a
//     container is a conflict, and with force it is only untagged.
func (s *Store) Delete(ref string, force bool, inUse func(id digest.Digest) bool) ([]imagetypes.DeleteResponse, error) {
	s.mu.Lock()
	img, tag, err := s.resolveLocked(ref)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	id := img.id
	s.mu.Unlock()
	// inUse calls back into the daemon, which may take its own locks.
	used := inUse != nil && inUse(id)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.images[id] != img {
		return nil, errdefs.NotFound(fmt.Errorf("No such image: %s", ref))
	}
	var tags []string
	for t, tid := range s.tags {
		if tid == id {
			tags = append(tags, t)
		}
	}
	sort.Strings(tags)
	short := id.Encoded()[:12]

	if tag != "" {
		if len(tags) > 1 {
			return s.untagLocked(tag)
		}
		if used {
			if !force {
				return nil, errdefs.Conflict(fmt.Errorf("conflict: unable to remove repository reference %q (must force) - container is using its referenced image %s", ref, short))
			}
			return s.untagLocked(tag)
		}
		return s.deleteImageLocked(img, tags)
	}

	if len(tags) > 1 && !force {
		return nil, errdefs.Conflict(fmt.Errorf("conflict: unable to delete %s (must be forced) - image is referenced in multiple repositories", short))
	}
	if used {
		if !force {
			return nil, errdefs.Conflict(fmt.Errorf("conflict: unable to delete %s (must be forced) - image is being used by a container", short))
		}
		return s.untagLocked(tags...)
	}
	return s.deleteImageLocked(img, tags)
}

// untagLocked removes tags, the image staying; an error changes nothing.
func (s *Store) untagLocked(tags ...string) ([]imagetypes.DeleteResponse, error) {
	var resp []imagetypes.DeleteResponse
	prev := map[string]digest.Digest{}
	for _, t := range tags {
		prev[t] = s.tags[t]
		delete(s.tags, t)
		resp = append(resp, imagetypes.DeleteResponse{Untagged: t})
	}
	if len(tags) == 0 {
		return resp, nil
	}
	if err := s.saveTagsLocked(); err != nil {
		for t, id := range prev {
			s.tags[t] = id
		}
		return nil, fmt.Errorf("untag: %w", err)
	}
	for _, t := range tags {
		if img := s.images[prev[t]]; img != nil {
			s.event(eventtypes.ActionUnTag, img.id, "", img.config.Config.Labels)
		}
	}
	return resp, nil
}

// deleteImageLocked removes the image and its tags. Nothing before the
// space is freed needs free space: the config is unlinked first (the
// commit: tags left on disk that name a missing image are dropped at the
// next open), then the layers nothing else holds, metadata before data,
// and repositories.json is rewritten last, through its spare
// (saveTagsLocked), which needs no free space either.
func (s *Store) deleteImageLocked(img *image, tags []string) ([]imagetypes.DeleteResponse, error) {
	if err := os.Remove(filepath.Join(s.imageDir(), img.id.Encoded())); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("delete image %s: %w", img.id, err)
	}
	crashpoint.Hit("rmi-after-image-config")
	delete(s.images, img.id)
	s.forgetImageLocked(img.id)
	var resp []imagetypes.DeleteResponse
	for _, t := range tags {
		delete(s.tags, t)
		resp = append(resp, imagetypes.DeleteResponse{Untagged: t})
	}
	resp = append(resp, imagetypes.DeleteResponse{Deleted: img.id.String()})
	for _, c := range s.releaseLayersLocked(img.chain) {
		resp = append(resp, imagetypes.DeleteResponse{Deleted: c.String()})
	}
	if len(tags) > 0 {
		crashpoint.Hit("rmi-before-tag")
		if err := s.saveTagsLocked(); err != nil {
			// The image is gone; its tags on disk are dropped at the next
			// open, or rewritten by the next save.
			slog.Warn("image store: image removed, but repositories.json still names it", "id", img.id, "err", err)
			s.tagsStale = true
		}
	}
	for range tags {
		s.event(eventtypes.ActionUnTag, img.id, "", img.config.Config.Labels)
	}
	s.event(eventtypes.ActionDelete, img.id, "", nil)
	return resp, nil
}
