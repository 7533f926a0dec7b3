package image

import (
	"fmt"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// MountImage mounts a read-only view of the image's filesystem at target
// (an existing, empty directory), for an image mount (--mount
// type=image). The caller unmounts target with umount(2). The image's
// layers are not referenced here: the daemon refuses to remove an image
// a container mounts, as it refuses for the container's own image.
func (s *Store) MountImage(imageID digest.Digest, target string) error {
	s.mu.Lock()
	img := s.images[imageID]
	var cache string
	if img != nil && len(img.chain) > 0 {
		if l := s.layers[img.chain[len(img.chain)-1]]; l != nil {
			cache = l.CacheID
		}
	}
	s.mu.Unlock()
	switch {
	case img == nil:
		return errdefs.NotFound(fmt.Errorf("No such image: %s", imageID))
	case len(img.chain) == 0:
		// An image without layers is an empty directory, read-only.
		if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "size=4k,mode=755"); err != nil {
			return fmt.Errorf("mount empty image %s: %w", imageID, err)
		}
		return nil
	case cache == "":
		return errdefs.NotFound(fmt.Errorf("image %s: top layer missing", imageID))
	}
	if err := s.driver.MountReadOnly(cache, target); err != nil {
		return fmt.Errorf("mount image %s: %w", imageID, err)
	}
	return nil
}
