package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	containertypes "github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

// upperDir is the directory of the container's own changes: overlay2's
// upper dir, beside the merged dir the rootfs is mounted on. The rootfs is
// mounted for the call if it was not.
func (d *Daemon) upperDir(c *container.Container) (string, error) {
	if d.images.Driver().Name() != "overlay2" {
		return "", errdefs.NotImplemented(fmt.Errorf("container changes need the overlay2 storage driver"))
	}
	merged, err := d.images.Mount(c.ID)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(merged), "diff"), nil
}

// lowerDirs are the image's layers under the container's, nearest first.
func lowerDirs(upper string) []string {
	layer := filepath.Dir(upper)
	data, err := os.ReadFile(filepath.Join(layer, "lower"))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), ":") {
		if l != "" {
			out = append(out, filepath.Join(filepath.Dir(layer), l))
		}
	}
	return out
}

// ContainerChanges is `docker diff`: what the container's writable layer
// adds, changes and deletes, leaving out the empty mountpoints the
// runtime made (as Docker's init layer keeps them out of its diff).
func (d *Daemon) ContainerChanges(ctx context.Context, name string) ([]containertypes.FilesystemChange, error) {
	c, err := d.containers.Get(name)
	if err != nil {
		return nil, err
	}
	if !c.HoldRootfs() {
		return nil, errdefs.Conflict(fmt.Errorf("container %s is being removed", name))
	}
	c.Lock()
	upper, err := d.upperDir(c)
	c.Unlock()
	defer func() {
		c.Lock()
		defer c.Unlock()
		if c.ReleaseRootfs() && !c.State.Running() {
			_ = d.images.Unmount(c.ID)
		}
	}()
	if err != nil {
		return nil, err
	}
	return overlayChanges(upper, lowerDirs(upper))
}

// overlayChanges walks an overlay upper dir: a whiteout is a deletion, a
// path the lower layers have is a modification (a directory only when its
// own mode or owner changed or something below it is listed), any other
// an addition.
func overlayChanges(upper string, lowers []string) ([]containertypes.FilesystemChange, error) {
	inLower := func(rel string) (os.FileInfo, bool) {
		for _, l := range lowers {
			if fi, err := os.Lstat(filepath.Join(l, rel)); err == nil {
				return fi, true
			}
		}
		return nil, false
	}
	var out []containertypes.FilesystemChange
	var dirs []int // indexes of directories listed as modified for their children only
	err := filepath.WalkDir(upper, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(upper, p)
		if rel == "." {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		path := "/" + filepath.ToSlash(rel)
		if fi.Mode()&fs.ModeCharDevice != 0 {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Rdev == 0 {
				out = append(out, containertypes.FilesystemChange{Kind: containertypes.ChangeDelete, Path: path})
				return nil
			}
		}
		if runtimeMountpoint(rel, fi) {
			return nil
		}
		low, ok := inLower(rel)
		switch {
		case !ok:
			out = append(out, containertypes.FilesystemChange{Kind: containertypes.ChangeAdd, Path: path})
		case fi.IsDir() && low.IsDir() && sameOwnerMode(fi, low) && !opaque(p):
			dirs = append(dirs, len(out))
			out = append(out, containertypes.FilesystemChange{Kind: containertypes.ChangeModify, Path: path})
		default:
			out = append(out, containertypes.FilesystemChange{Kind: containertypes.ChangeModify, Path: path})
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("container changes: %w", err)
	}
	// A directory copied up only for what lies below it is listed only
	// if something below it still is.
	var keep []containertypes.FilesystemChange
	for i, ch := range out {
		if slices.Contains(dirs, i) && !slices.ContainsFunc(out[i+1:], func(o containertypes.FilesystemChange) bool {
			return strings.HasPrefix(o.Path, ch.Path+"/") && !slices.Contains(dirs, slices.Index(out, o))
		}) {
			continue
		}
		keep = append(keep, ch)
	}
	if keep == nil {
		keep = []containertypes.FilesystemChange{}
	}
	return keep, nil
}

// runtimeMountpoint reports an empty file or directory the runtime made to
// mount on.
func runtimeMountpoint(rel string, fi os.FileInfo) bool {
	if !slices.Contains(runtimeMountpoints, filepath.ToSlash(rel)) {
		return false
	}
	if fi.Mode().IsRegular() {
		return fi.Size() == 0
	}
	return fi.IsDir()
}

func sameOwnerMode(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return a.Mode() == b.Mode() && ok1 && ok2 && sa.Uid == sb.Uid && sa.Gid == sb.Gid
}

func opaque(dir string) bool {
	buf := make([]byte, 1)
	n, err := unix.Lgetxattr(dir, "trusted.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}
