package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/sdengine/engine/container"
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
	rootfs, release, err := d.holdRootfs(c, name, nil)
	if err != nil {
		return err
	}
	defer release()
	return archive.TarDir(rootfs, w)
}

// holdRootfs mounts c's rootfs if it is not (a stopped container) and
// holds it: until release, an exit leaves it mounted and a removal is
// refused. locked, if not nil, runs under the container's lock right after
// the mount, to read what the caller needs of the record at that moment.
// release unmounts it again if this was the last hold and the container is
// not running.
func (d *Daemon) holdRootfs(c *container.Container, name string, locked func()) (rootfs string, release func(), err error) {
	if !c.HoldRootfs() {
		return "", nil, errdefs.Conflict(fmt.Errorf("container %s is being removed", name))
	}
	release = func() {
		c.Lock()
		defer c.Unlock()
		if c.ReleaseRootfs() && !c.State.Running() {
			if err := d.images.Unmount(c.ID); err != nil {
				slog.Warn("unmount after a hold on the rootfs", "id", c.ID, "err", err)
			}
		}
	}
	c.Lock()
	rootfs, err = d.images.Mount(c.ID)
	if err == nil && locked != nil {
		locked()
	}
	c.Unlock()
	if err != nil {
		release()
		return "", nil, fmt.Errorf("mount the filesystem of container %s: %w", name, err)
	}
	return rootfs, release, nil
}
