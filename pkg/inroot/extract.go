package inroot

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ExtractOptions are PUT .../archive's.
type ExtractOptions struct {
	// NoOverwriteDirNonDir refuses to replace a directory with a
	// non-directory or the reverse.
	NoOverwriteDirNonDir bool
	// Chown, when set, owns every entry by UID:GID instead of the tar's.
	Chown    bool
	UID, GID int
	// NoChown keeps the extracting process's ownership (a client
	// extracting to the host).
	NoChown bool
	// Rename, when set, renames each entry (a client's cp renaming the
	// copied object); the result is checked like the name.
	Rename func(name string) string
}

// Extract unpacks the tar stream r into the directory dir inside the root.
// Entry names are taken relative to dir (a leading "/" too); one that
// climbs out with ".." is refused. Each entry's parent is resolved (and
// made) inside the root, and the entry itself created from its parent's
// handle without following anything: a symlink in the container, or one
// the archive itself carries, cannot send a write outside the root.
func (r *Root) Extract(dir string, rd io.Reader, opts ExtractOptions) error {
	dst := Clean(dir)
	de, err := r.Lookup(dir, true)
	if err != nil {
		return err
	}
	isDir := de.IsDir()
	de.Close()
	if !isDir {
		return errdefs.InvalidParameter(fmt.Errorf("extraction point is not a directory: %s: not a directory", dir))
	}
	type dirTime struct {
		p  string
		ts []unix.Timespec
	}
	var dirTimes []dirTime
	tr := tar.NewReader(rd)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return errdefs.InvalidParameter(fmt.Errorf("invalid tar stream: %w", err))
		}
		name := hdr.Name
		if opts.Rename != nil {
			name = opts.Rename(name)
		}
		rel := path.Clean(strings.TrimPrefix(name, "/"))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return errdefs.InvalidParameter(fmt.Errorf("invalid tar entry %q: it climbs out of the destination", hdr.Name))
		}
		full := path.Join(dst, rel)
		if rel == "." {
			continue // the destination itself exists
		}
		if err := r.extractEntry(tr, hdr, dst, full, opts); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeDir {
			ts := []unix.Timespec{unix.NsecToTimespec(hdr.AccessTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
			if hdr.AccessTime.IsZero() {
				ts[0] = ts[1]
			}
			dirTimes = append(dirTimes, dirTime{full, ts})
		}
	}
	// Directory times last: their entries changed them.
	for i := len(dirTimes) - 1; i >= 0; i-- {
		if e, err := r.Lookup(dirTimes[i].p, false); err == nil {
			if e.IsDir() {
				_ = unix.UtimesNanoAt(int(e.Parent.Fd()), e.Name, dirTimes[i].ts, unix.AT_SYMLINK_NOFOLLOW)
			}
			e.Close()
		}
	}
	return nil
}

func (r *Root) extractEntry(tr *tar.Reader, hdr *tar.Header, dst, full string, opts ExtractOptions) error {
	parent, err := pathrs.MkdirAllHandle(r.f, path.Dir(full), 0o755)
	if err != nil {
		return fmt.Errorf("create parent of %s: %w", full, err)
	}
	defer parent.Close()
	pfd := int(parent.Fd())
	name := path.Base(full)

	var old unix.Stat_t
	exists := unix.Fstatat(pfd, name, &old, unix.AT_SYMLINK_NOFOLLOW) == nil
	if exists {
		oldDir := old.Mode&unix.S_IFMT == unix.S_IFDIR
		newDir := hdr.Typeflag == tar.TypeDir
		switch {
		case oldDir && newDir:
			// kept; its metadata is updated below
		case opts.NoOverwriteDirNonDir && oldDir != newDir:
			if oldDir {
				return errdefs.InvalidParameter(fmt.Errorf("cannot overwrite directory %q with non-directory %q", full, hdr.Name))
			}
			return errdefs.InvalidParameter(fmt.Errorf("cannot overwrite non-directory %q with directory %q", full, hdr.Name))
		case oldDir:
			if err := unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR); err != nil {
				return fmt.Errorf("replace directory %s: %w", full, err)
			}
		default:
			if err := unix.Unlinkat(pfd, name, 0); err != nil {
				return fmt.Errorf("replace %s: %w", full, err)
			}
		}
	}
	perm := uint32(hdr.Mode & 0o7777)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(pfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("mkdir %s: %w", full, err)
		}
	//lint:ignore SA1019 old (V7) tars still carry TypeRegA
	case tar.TypeReg, tar.TypeRegA:
		f, err := openAt(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", full, err)
		}
	case tar.TypeSymlink:
		// A link is only a name: it is never followed by this package,
		// and inside the container it resolves in the container's root.
		if err := unix.Symlinkat(hdr.Linkname, pfd, name); err != nil {
			return fmt.Errorf("symlink %s: %w", full, err)
		}
	case tar.TypeLink:
		lrel := path.Clean(strings.TrimPrefix(hdr.Linkname, "/"))
		if lrel == ".." || strings.HasPrefix(lrel, "../") || lrel == "." {
			return errdefs.InvalidParameter(fmt.Errorf("invalid tar entry %q: hard link target %q climbs out of the destination", hdr.Name, hdr.Linkname))
		}
		// The target is named relative to the archive's root, the
		// extraction directory.
		te, err := r.Lookup(path.Join(dst, lrel), false)
		if err != nil {
			return fmt.Errorf("hard link %s: %w", full, err)
		}
		err = unix.Linkat(int(te.Parent.Fd()), te.Name, pfd, name, 0)
		te.Close()
		if err != nil {
			return fmt.Errorf("hard link %s: %w", full, err)
		}
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		mode := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[hdr.Typeflag]
		dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
		if err := unix.Mknodat(pfd, name, mode|perm, int(dev)); err != nil {
			return fmt.Errorf("mknod %s: %w", full, err)
		}
	default:
		return nil // what Docker skips too (xattr headers, sockets)
	}
	uid, gid := hdr.Uid, hdr.Gid
	if opts.Chown {
		uid, gid = opts.UID, opts.GID
	}
	if !opts.NoChown {
		if err := unix.Fchownat(pfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown %s: %w", full, err)
		}
	}
	if hdr.Typeflag != tar.TypeSymlink && hdr.Typeflag != tar.TypeLink {
		// chmod through a handle of the object itself: fchmodat would
		// follow a symlink swapped in meanwhile.
		h, err := openAt(parent, name, unix.O_PATH)
		if err != nil {
			return err
		}
		err = unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", h.Fd()), perm, 0)
		h.Close()
		if err != nil {
			return fmt.Errorf("chmod %s: %w", full, err)
		}
	}
	if hdr.Typeflag != tar.TypeDir && hdr.Typeflag != tar.TypeLink {
		ts := []unix.Timespec{unix.NsecToTimespec(hdr.ModTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
		if !hdr.AccessTime.IsZero() {
			ts[0] = unix.NsecToTimespec(hdr.AccessTime.UnixNano())
		}
		if err := unix.UtimesNanoAt(pfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("set times of %s: %w", full, err)
		}
	}
	return nil
}

// IsNotExist reports whether err says a path does not exist.
func IsNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT)
}
