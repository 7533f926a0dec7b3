// Package graphdriver stores layer trees on disk and assembles them into
// container root filesystems.
package graphdriver

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sdengine/engine/image/graphdriver/overlay2"
	"github.com/sdengine/engine/image/graphdriver/vfs"
	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Driver manages layer directories identified by opaque ids.
type Driver interface {
	Name() string
	// Create makes a read-only layer on top of parent ("" for a base layer).
	Create(id, parent string) error
	// CreateRW makes a container's writable layer on top of parent.
	CreateRW(id, parent string) error
	// Diff is the directory a layer's tar is extracted into (valid after Create).
	Diff(id string) string
	// Mount assembles the layer with its parents and returns the rootfs
	// path. It is idempotent: an existing mount is reused, so containers
	// that kept running across a daemon restart keep their rootfs.
	Mount(id string) (string, error)
	Unmount(id string) error
	// MountReadOnly mounts a read-only layer with its parents, read-only,
	// at target (an existing directory outside the driver's root), for an
	// image mount. The caller unmounts target itself (umount(2)); unlike
	// Mount, nothing is shared, so any number of such views can coexist.
	MountReadOnly(id, target string) error
	Remove(id string) error
	// List returns the ids of every layer directory on disk, complete or
	// not, so that the image store can remove those no metadata refers to.
	List() ([]string, error)
	// Whiteouts says how layer tars must be applied into Diff dirs.
	Whiteouts() archive.WhiteoutMode
	// Cleanup unmounts everything on an orderly shutdown.
	Cleanup() error
}

// MetadataDriver is implemented by drivers that can describe a layer's
// directories for `docker inspect` (GraphDriver.Data).
type MetadataDriver interface {
	Metadata(id string) (map[string]string, error)
}

// New opens the driver called name under root. An empty name picks
// overlay2 when a real test mount works on root's filesystem, else vfs.
func New(root string, name string) (Driver, error) {
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("graphdriver root: %w", err)
	}
	switch name {
	case "overlay2", "overlay":
		return overlay2.New(filepath.Join(root, "overlay2"))
	case "vfs":
		return vfs.New(filepath.Join(root, "vfs"))
	case "":
		// Keep using whatever driver already holds layers here.
		if hasEntries(filepath.Join(root, "vfs")) && !hasEntries(filepath.Join(root, "overlay2")) {
			return vfs.New(filepath.Join(root, "vfs"))
		}
		if err := overlay2.Supported(root); err != nil {
			slog.Warn("overlayfs unusable, falling back to vfs", "root", root, "err", err)
			return vfs.New(filepath.Join(root, "vfs"))
		}
		return overlay2.New(filepath.Join(root, "overlay2"))
	}
	return nil, errdefs.InvalidParameter(fmt.Errorf("unknown storage driver %q (supported: overlay2, vfs)", name))
}

func hasEntries(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}
