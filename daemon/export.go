package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/errdefs"
)

// ContainerExport writes the container's filesystem (image and writable
// layer together, as the container sees it, without its mounts) to w as a
// tar: `docker export`. A running container's rootfs is read as it is; a
// stopped one's is mounted for the export and unmounted after, unless the
// container was started meanwhile. The container's lock is not held while
// the tar streams, so a slow client blocks nobody; a hold on the rootfs
// keeps an exit from unmounting it and a removal from deleting it.
func (d *Daemon) ContainerExport(ctx context.Context, name string, w io.Writer) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	if !c.HoldRootfs() {
		return errdefs.Conflict(fmt.Errorf("container %s is being removed", name))
	}
	c.Lock()
	rootfs, err := d.images.Mount(c.ID)
	c.Unlock()
	defer func() {
		c.Lock()
		defer c.Unlock()
		if c.ReleaseRootfs() && !c.State.Running() {
			if err := d.images.Unmount(c.ID); err != nil {
				slog.Warn("unmount after export", "id", c.ID, "err", err)
			}
		}
	}()
	if err != nil {
		return fmt.Errorf("mount the filesystem of container %s: %w", name, err)
	}
	return archive.TarDir(rootfs, w)
}
