package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/inroot"
)

// docker cp: HEAD, GET and PUT /containers/{id}/archive.
//
// Paths are resolved on the host side, never in the container's mount
// namespace: in the container's rootfs (mounted for the copy when the
// container is stopped, held as export holds it), or, for a path under
// a bind or volume destination, in that mount's source on the host,
// chosen lexically by the longest destination that is a prefix of the
// path. Every lookup inside the chosen root is made with pkg/inroot
// (openat2 RESOLVE_IN_ROOT semantics, the last component never followed),
// so no symlink the container holds, or swaps in during the copy, can send
// a read or a write outside it. A symlink inside a volume is resolved
// within that volume, not the container's root, and a tmpfs mount is not
// reachable (the rootfs below it is used): docs/differences.md.

// cpRoot is where a container path is found for cp.
type cpRoot struct {
	dir      string // host directory that is "/" for inPath
	inPath   string // the path inside dir, with the user's trailing "/" or "/."
	readOnly bool
	what     string // "container rootfs" or "mounted volume", for messages
}

// withCopyRoot holds the container's rootfs (mounting it if it is
// stopped) while fn runs on the root the path is in.
func (d *Daemon) withCopyRoot(name, p string, fn func(r *inroot.Root, at cpRoot, c *container.Container, rootfs string) error) error {
	if p == "" {
		return errdefs.InvalidParameter(fmt.Errorf("path cannot be empty"))
	}
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	var mps []*container.MountPoint
	var readonlyRootfs bool
	rootfs, release, err := d.holdRootfs(c, name, func() {
		mps = mountPointsOf(c)
		readonlyRootfs = c.HostConfig.ReadonlyRootfs
	})
	if err != nil {
		return err
	}
	defer release()
	at := copyRootFor(rootfs, readonlyRootfs, mps, p)
	r, err := inroot.Open(at.dir)
	if err != nil {
		return fmt.Errorf("open %s of container %s: %w", at.what, name, err)
	}
	defer r.Close()
	err = fn(r, at, c, rootfs)
	switch {
	case err == nil:
		return nil
	case inroot.IsNotExist(err):
		return errdefs.NotFound(fmt.Errorf("Could not find the file %s in container %s", p, name))
	case errors.Is(err, unix.ENOTDIR):
		return errdefs.InvalidParameter(fmt.Errorf("%s: not a directory", p))
	case errors.Is(err, unix.ELOOP):
		return errdefs.InvalidParameter(fmt.Errorf("%s: too many levels of symbolic links", p))
	}
	return err
}

// copyRootFor picks the root a path is in: the rootfs, or the source of
// the bind or volume whose destination is the longest prefix of it.
func copyRootFor(rootfs string, readonlyRootfs bool, mps []*container.MountPoint, p string) cpRoot {
	clean := inroot.Clean(p)
	suffix := ""
	switch {
	case p == "." || strings.HasSuffix(p, "/."):
		suffix = "/."
	case strings.HasSuffix(p, "/"):
		suffix = "/"
	}
	at := cpRoot{dir: rootfs, inPath: clean + suffix, readOnly: readonlyRootfs, what: "container rootfs"}
	best := ""
	for _, mp := range mps {
		if mp.Type != mount.TypeBind && mp.Type != mount.TypeVolume || mp.Source == "" {
			continue
		}
		d := mp.Destination
		if (clean == d || strings.HasPrefix(clean, d+"/")) && len(d) > len(best) {
			best = d
			rel := strings.TrimPrefix(clean, d)
			at = cpRoot{dir: mp.Source, inPath: "/" + strings.TrimPrefix(rel, "/") + suffix, readOnly: !mp.RW, what: "mounted volume"}
		}
	}
	return at
}

// archiveBase is the name Docker gives the copied object in the archive
// and the stat: the last element of the path as written ("." for a path
// ending in "/.", "/" for the root).
func archiveBase(p string) string {
	trimmed := strings.TrimRight(p, "/")
	if trimmed == "." || strings.HasSuffix(trimmed, "/.") {
		return "."
	}
	return filepath.Base(path.Join("/", p))
}

func pathStat(st inroot.Stat, base string) *containertypes.PathStat {
	return &containertypes.PathStat{Name: base, Size: st.Size, Mode: st.Mode, Mtime: st.Mtime, LinkTarget: st.LinkTarget}
}

// ContainerStatPath serves HEAD /containers/{id}/archive.
func (d *Daemon) ContainerStatPath(ctx context.Context, name, p string) (*containertypes.PathStat, error) {
	var out *containertypes.PathStat
	err := d.withCopyRoot(name, p, func(r *inroot.Root, at cpRoot, _ *container.Container, _ string) error {
		st, err := r.Stat(at.inPath)
		if err != nil {
			return err
		}
		out = pathStat(st, archiveBase(p))
		return nil
	})
	return out, err
}

// ContainerArchivePath serves GET /containers/{id}/archive: start is
// called with the path's stat once it is known to exist, and returns
// where the tar goes.
func (d *Daemon) ContainerArchivePath(ctx context.Context, name, p string, start func(*containertypes.PathStat) io.Writer) error {
	return d.withCopyRoot(name, p, func(r *inroot.Root, at cpRoot, _ *container.Container, _ string) error {
		st, err := r.Stat(at.inPath)
		if err != nil {
			return err
		}
		base := archiveBase(p)
		w := start(pathStat(st, base))
		return r.Tar(at.inPath, base, w)
	})
}

// ContainerExtractToDir serves PUT /containers/{id}/archive: the tar in
// content is unpacked into the directory p. With copyUIDGID and a user
// set for the container, everything is owned by that user (as Docker's
// -a); otherwise the archive's owners are kept.
func (d *Daemon) ContainerExtractToDir(ctx context.Context, name, p string, copyUIDGID, noOverwriteDirNonDir bool, content io.Reader) error {
	return d.withCopyRoot(name, p, func(r *inroot.Root, at cpRoot, c *container.Container, rootfs string) error {
		if at.readOnly {
			if at.what == "container rootfs" {
				return errdefs.Forbidden(fmt.Errorf("container rootfs is marked read-only"))
			}
			return errdefs.Forbidden(fmt.Errorf("mounted volume is marked read-only"))
		}
		opts := inroot.ExtractOptions{NoOverwriteDirNonDir: noOverwriteDirNonDir}
		c.Lock()
		user := c.Config.User
		c.Unlock()
		if copyUIDGID && user != "" {
			uid, gid, _, err := oci.ResolveUser(rootfs, user, nil)
			if err != nil {
				return err
			}
			opts.Chown, opts.UID, opts.GID = true, int(uid), int(gid)
		}
		return r.Extract(at.inPath, content, opts)
	})
}
