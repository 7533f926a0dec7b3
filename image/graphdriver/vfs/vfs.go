// Package vfs is the fallback graph driver: every layer is a full copy of
// its parent plus its own changes, so it works on any filesystem.
package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/fscopy"
)

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Driver is the vfs driver rooted at a directory.
type Driver struct {
	root string
}

// New opens (creating if needed) a vfs store at root.
func New(root string) (*Driver, error) {
	if err := os.MkdirAll(filepath.Join(root, "dir"), 0o711); err != nil {
		return nil, fmt.Errorf("vfs: %w", err)
	}
	return &Driver{root: root}, nil
}

// Name implements graphdriver.Driver.
func (d *Driver) Name() string { return "vfs" }

// Whiteouts implements graphdriver.Driver: a layer is applied onto a copy
// of its parent, so whiteouts delete.
func (d *Driver) Whiteouts() archive.WhiteoutMode { return archive.WhiteoutDelete }

// Diff implements graphdriver.Driver.
func (d *Driver) Diff(id string) string { return filepath.Join(d.root, "dir", id) }

func checkID(id string) error {
	if !validID.MatchString(id) {
		return errdefs.InvalidParameter(fmt.Errorf("vfs: invalid layer id %q", id))
	}
	return nil
}

// Create implements graphdriver.Driver.
func (d *Driver) Create(id, parent string) error { return d.create(id, parent) }

// CreateRW implements graphdriver.Driver.
func (d *Driver) CreateRW(id, parent string) error { return d.create(id, parent) }

func (d *Driver) create(id, parent string) error {
	if err := checkID(id); err != nil {
		return err
	}
	dir := d.Diff(id)
	if parent == "" {
		if err := os.Mkdir(dir, 0o755); err != nil {
			if errors.Is(err, os.ErrExist) {
				return errdefs.Conflict(fmt.Errorf("vfs: layer %s already exists", id))
			}
			return fmt.Errorf("vfs: %w", err)
		}
		return nil
	}
	if err := checkID(parent); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); err == nil {
		return errdefs.Conflict(fmt.Errorf("vfs: layer %s already exists", id))
	}
	// Copy into a temporary name so a crash never leaves a half copy
	// under the real id.
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := fscopy.Tree(d.Diff(parent), tmp); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("vfs: copy parent %s: %w", parent, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("vfs: %w", err)
	}
	return nil
}

// Mount implements graphdriver.Driver: the layer dir is the rootfs.
func (d *Driver) Mount(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	if _, err := os.Stat(d.Diff(id)); err != nil {
		return "", errdefs.NotFound(fmt.Errorf("vfs: layer %s: %w", id, err))
	}
	return d.Diff(id), nil
}

// MountReadOnly implements graphdriver.Driver: a vfs layer is a full
// copy of its parents, so a read-only bind of its directory is the view.
func (d *Driver) MountReadOnly(id, target string) error {
	if err := checkID(id); err != nil {
		return err
	}
	src := d.Diff(id)
	if _, err := os.Stat(src); err != nil {
		return errdefs.NotFound(fmt.Errorf("vfs: layer %s: %w", id, err))
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("vfs: bind %s at %s: %w", id, target, err)
	}
	// A bind takes the read-only flag only on a remount.
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("vfs: remount %s read-only: %w", target, err)
	}
	return nil
}

// Unmount implements graphdriver.Driver; nothing is mounted.
func (d *Driver) Unmount(id string) error { return checkID(id) }

// Remove implements graphdriver.Driver.
func (d *Driver) Remove(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := os.RemoveAll(d.Diff(id)); err != nil {
		return fmt.Errorf("vfs: remove %s: %w", id, err)
	}
	return nil
}

// List implements graphdriver.Driver. A parent copy interrupted by a
// crash shows up as "<id>.tmp", which nothing refers to.
func (d *Driver) List() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(d.root, "dir"))
	if err != nil {
		return nil, fmt.Errorf("vfs: %w", err)
	}
	ids := make([]string, 0, len(ents))
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids, nil
}

// Cleanup implements graphdriver.Driver.
func (d *Driver) Cleanup() error { return nil }

// Metadata describes the layer for docker inspect.
func (d *Driver) Metadata(id string) (map[string]string, error) {
	return map[string]string{"Dir": d.Diff(id)}, nil
}
