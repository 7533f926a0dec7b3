package image

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/opencontainers/go-digest"

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
	var resp []imagetypes.DeleteResponse
	untag := func(ts ...string) error {
		for _, t := range ts {
			delete(s.tags, t)
			resp = append(resp, imagetypes.DeleteResponse{Untagged: t})
		}
		return s.saveTagsLocked()
	}

	if tag != "" {
		if len(tags) > 1 {
			return resp, untag(tag)
		}
		if used {
			if !force {
				return nil, errdefs.Conflict(fmt.Errorf("conflict: unable to remove repository reference %q (must force) - container is using its referenced image %s", ref, short))
			}
			return resp, untag(tag)
		}
		if err := untag(tag); err != nil {
			return resp, err
		}
		return s.deleteImageLocked(img, resp)
	}

	if len(tags) > 1 && !force {
		return nil, errdefs.Conflict(fmt.Errorf("conflict: unable to delete %s (must be forced) - image is referenced in multiple repositories", short))
	}
	if used {
		if !force {
			return nil, errdefs.Conflict(fmt.Errorf("conflict: unable to delete %s (must be forced) - image is being used by a container", short))
		}
		return resp, untag(tags...)
	}
	if err := untag(tags...); err != nil {
		return resp, err
	}
	return s.deleteImageLocked(img, resp)
}

func (s *Store) deleteImageLocked(img *image, resp []imagetypes.DeleteResponse) ([]imagetypes.DeleteResponse, error) {
	// The config goes first: after a crash the image is gone and its
	// layers are collected as unreferenced at the next start.
	if err := os.Remove(filepath.Join(s.imageDir(), img.id.Encoded())); err != nil && !os.IsNotExist(err) {
		return resp, fmt.Errorf("delete image %s: %w", img.id, err)
	}
	delete(s.images, img.id)
	resp = append(resp, imagetypes.DeleteResponse{Deleted: img.id.String()})
	for _, c := range s.releaseLayersLocked(img.chain) {
		resp = append(resp, imagetypes.DeleteResponse{Deleted: c.String()})
	}
	return resp, nil
}
