package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/docker/docker/api/types/mount"
	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Image mounts (--mount type=image,source=IMAGE,target=PATH
// [,image-subpath=SUB]): a read-only view of a local image's filesystem,
// mounted by the graph driver below the container's directory while the
// container runs (image-mounts/<n>, n the mount point's index) and bound
// from there into the container. A container that mounts an image
// counts as a user of it, so the image cannot be removed meanwhile.

// imageMountsDir is where a container's image views are mounted.
func imageMountsDir(c *container.Container) string { return filepath.Join(c.Root, "image-mounts") }

// resolveImageMount finds an image mount's image (it must be local: no
// pull, as in Docker) and, with a subpath, checks that the subpath is a
// directory or file of the image, so that a bad one fails the create.
func (d *Daemon) resolveImageMount(mp *container.MountPoint) error {
	img, err := d.images.Get(mp.Source)
	if err != nil {
		// Not a NotFound (404): docker's CLI takes a 404 from create for
		// the container's own image missing, and pulls that.
		if errdefs.IsNotFound(err) {
			return invalidMount(mount.TypeImage, "image %s not found locally (image mounts do not pull): %v", mp.Source, err)
		}
		return invalidMount(mount.TypeImage, "image %s: %v", mp.Source, err)
	}
	mp.ImageID = img.ID.String()
	if mp.Subpath == "" {
		return nil
	}
	if err := os.MkdirAll(imageCheckDir(d.cfg.Root), 0o700); err != nil {
		return fmt.Errorf("image mount check: %w", err)
	}
	dir, err := os.MkdirTemp(imageCheckDir(d.cfg.Root), "")
	if err != nil {
		return fmt.Errorf("image mount check: %w", err)
	}
	defer os.Remove(dir)
	if err := d.images.MountImage(img.ID, dir); err != nil {
		return err
	}
	defer unmountImageView(dir)
	if _, err := volumeSubpath(dir, mp.Subpath); err != nil {
		return invalidMount(mount.TypeImage, "subpath %q of image %s: %v", mp.Subpath, mp.Source, err)
	}
	return nil
}

// imageCheckDir holds the short-lived views resolveImageMount checks a
// subpath in.
func imageCheckDir(root string) string { return filepath.Join(root, "image-mount-check") }

// cleanImageChecks unmounts and removes the views of checks that a
// crash cut short (at daemon start, before any create).
func cleanImageChecks(root string) {
	if err := unmountImageViews(imageCheckDir(root)); err != nil {
		slog.Error("image mount checks left by a crash", "err", err)
	}
}

// imageSpecMount mounts the image view of c's i-th mount point and
// returns the spec's bind of it (or of its subpath), read-only and
// rprivate. The caller holds c's lock; unmountImageMounts undoes it.
func (d *Daemon) imageSpecMount(c *container.Container, i int, mp *container.MountPoint) (specs.Mount, error) {
	id, err := digest.Parse(mp.ImageID)
	if err != nil {
		return specs.Mount{}, fmt.Errorf("image mount %s: no image recorded: %w", mp.Destination, err)
	}
	dir := filepath.Join(imageMountsDir(c), strconv.Itoa(i))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return specs.Mount{}, fmt.Errorf("image mount %s: %w", mp.Destination, err)
	}
	// A view left by a start that did not finish is replaced, not stacked.
	if ok, _ := mountinfo.Mounted(dir); ok {
		if err := unmountImageView(dir); err != nil {
			return specs.Mount{}, err
		}
	}
	if err := d.images.MountImage(id, dir); err != nil {
		if errdefs.IsNotFound(err) {
			return specs.Mount{}, errdefs.NotFound(fmt.Errorf("image mount %s: image %s is gone: %w", mp.Destination, mp.Source, err))
		}
		return specs.Mount{}, err
	}
	src := dir
	if mp.Subpath != "" {
		if src, err = volumeSubpath(dir, mp.Subpath); err != nil {
			return specs.Mount{}, invalidMount(mount.TypeImage, "subpath %q of image %s: %v", mp.Subpath, mp.Source, err)
		}
	}
	return specs.Mount{Destination: mp.Destination, Type: "bind", Source: src,
		Options: []string{"rbind", "rprivate", "ro"}}, nil
}

// unmountImageMounts unmounts every image view of the container (exit,
// failed start, removal, recovery) and removes their directories. The
// caller holds c's lock, or c is not shared yet.
func (d *Daemon) unmountImageMounts(c *container.Container) {
	if err := unmountImageViews(imageMountsDir(c)); err != nil {
		slog.Error("unmount image mounts", "id", c.ID, "err", err)
	}
}

// unmountImageViews unmounts the image views below base (a container's
// image-mounts directory) and removes their directories and base. It
// reads the mount table, not the mount points, so that it also finds
// what a crash left, or a container without a record.
func unmountImageViews(base string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(base))
	if err != nil {
		return fmt.Errorf("list image mounts: %w", err)
	}
	var errs []error
	// Deepest (and latest) first.
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := unmountImageView(mounts[i].Mountpoint); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Remove, not RemoveAll: a directory still mounted on (which the
	// table did not show) must not be emptied through.
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		os.Remove(filepath.Join(base, e.Name()))
	}
	os.Remove(base)
	return nil
}

// unmountImageView unmounts one view, detaching it if something still
// holds it (a lingering namespace).
func unmountImageView(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// mountsImage reports whether the container has an image mount of id.
// The caller holds c's lock.
func mountsImage(c *container.Container, id string) bool {
	for _, mp := range c.MountPoints {
		if mp.Type == mount.TypeImage && mp.ImageID == id {
			return true
		}
	}
	return false
}
