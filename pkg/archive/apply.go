package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
)

const xattrPAXPrefix = "SCHILY.xattr."

type applier struct {
	dest    string
	opts    ApplyOptions
	rec     *recorder
	size    int64
	created map[string]bool // absolute paths written by this stream
	dirs    []*tar.Header   // directory times are set last
	dirPath []string

	written   int64 // what Check counts
	nextCheck int64
	checkErr  error // what Check said, returned unwrapped
}

// charge counts n bytes written and calls Check when another CheckEvery
// bytes have gone by.
func (a *applier) charge(n int64) error {
	if a.opts.Check == nil || a.checkErr != nil {
		return a.checkErr
	}
	a.written += n
	if a.written < a.nextCheck {
		return nil
	}
	every := a.opts.CheckEvery
	if every <= 0 {
		every = DefaultCheckEvery
	}
	a.nextCheck = a.written + every
	a.checkErr = a.opts.Check(a.written)
	return a.checkErr
}

// checkedWriter charges what goes through it.
type checkedWriter struct {
	a *applier
	w io.Writer
}

func (c checkedWriter) Write(p []byte) (int, error) {
	if err := c.a.charge(int64(len(p))); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Apply extracts the (optionally gzip-compressed) tar stream r into dest
// and returns the number of bytes of file content written.
func Apply(ctx context.Context, r io.Reader, dest string, opts ApplyOptions) (int64, error) {
	src, closeFn, err := decompress(r)
	if err != nil {
		return 0, err
	}
	defer closeFn()

	a := &applier{dest: dest, opts: opts, created: map[string]bool{}}
	if opts.Check != nil {
		if err := opts.Check(0); err != nil {
			return 0, err
		}
		a.nextCheck = opts.CheckEvery
		if a.nextCheck <= 0 {
			a.nextCheck = DefaultCheckEvery
		}
	}
	var sinks []io.Writer
	if opts.Digest != nil {
		sinks = append(sinks, opts.Digest)
	}
	if opts.Meta != nil {
		a.rec = newRecorder(opts.Meta)
		sinks = append(sinks, a.rec)
	}
	stream := src
	if len(sinks) > 0 {
		stream = io.TeeReader(src, io.MultiWriter(sinks...))
	}
	tr := tar.NewReader(stream)
	for {
		if err := ctx.Err(); err != nil {
			return a.size, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return a.size, invalid("invalid tar stream: %w", err)
		}
		if err := a.charge(entryCost); err != nil {
			return a.size, err
		}
		if err := a.entry(tr, hdr); err != nil {
			if a.checkErr != nil {
				return a.size, a.checkErr
			}
			return a.size, err
		}
	}
	// The tar reader stops at the end-of-archive marker; pull the rest
	// (zero blocks, padding) so the digest covers the whole stream.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return a.size, invalid("invalid tar stream: %w", err)
	}
	for i := len(a.dirs) - 1; i >= 0; i-- {
		// A later entry may have replaced the directory, or one above it,
		// with a symlink: set times only where the path still resolves,
		// inside dest, to the directory made.
		rel, _ := cleanName(a.dirs[i].Name)
		if p, err := securejoin.SecureJoin(dest, rel); err != nil || p != a.dirPath[i] {
			continue
		}
		if err := setTimes(a.dirPath[i], a.dirs[i]); err != nil {
			return a.size, err
		}
	}
	if a.rec != nil {
		if err := a.rec.close(); err != nil {
			return a.size, err
		}
	}
	return a.size, nil
}

// resolve returns the on-disk path for rel: its parent is resolved
// inside dest (symlinks are followed as if dest were /), the last
// component is returned as is and never followed.
func (a *applier) resolve(rel string) (string, error) {
	parent, err := a.secureDir(rel, path.Dir(rel))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create parent of %q: %w", rel, err)
	}
	return filepath.Join(parent, path.Base(rel)), nil
}

// secureDir resolves the directory dirRel (of entry name) inside dest,
// following symlinks as if dest were /, so nothing is ever written
// outside dest. An entry that would be written through a symlink whose
// relative target climbs above the root is refused outright: such a
// link is fine as data, but writing through it is what a hostile layer
// does.
func (a *applier) secureDir(name, dirRel string) (string, error) {
	if dirRel != "." {
		cur := ""
		for _, c := range strings.Split(dirRel, "/") {
			cur = path.Join(cur, c)
			fi, err := os.Lstat(filepath.Join(a.dest, cur))
			if err != nil {
				break // missing (made below) or under a link already checked
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				continue
			}
			link, err := os.Readlink(filepath.Join(a.dest, cur))
			if err != nil {
				return "", fmt.Errorf("resolve %q: %w", name, err)
			}
			if !path.IsAbs(link) {
				if j := path.Join(path.Dir(cur), link); j == ".." || strings.HasPrefix(j, "../") {
					return "", invalid("tar entry %q: written through symlink %q -> %q, which escapes the destination", name, cur, link)
				}
			}
			break // the rest is resolved by SecureJoin, inside dest
		}
	}
	dir, err := securejoin.SecureJoin(a.dest, dirRel)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", name, err)
	}
	return dir, nil
}

func (a *applier) entry(tr *tar.Reader, hdr *tar.Header) error {
	rel, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil // the root itself: dest already exists
	}
	base := path.Base(rel)
	if a.opts.Whiteouts != WhiteoutNone && strings.HasPrefix(base, whPrefix) {
		return a.whiteout(rel, hdr)
	}
	target, err := a.resolve(rel)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(target); err == nil {
		if !(fi.IsDir() && hdr.Typeflag == tar.TypeDir) {
			if err := os.RemoveAll(target); err != nil {
				return fmt.Errorf("replace %q: %w", rel, err)
			}
		}
	}
	a.created[target] = true

	perm := uint32(hdr.Mode & 0o7777)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("mkdir %q: %w", rel, err)
		}
	//lint:ignore SA1019 old (V7) tars still carry TypeRegA, which the reader passes through
	case tar.TypeReg, tar.TypeRegA, tar.TypeGNUSparse:
		if err := a.writeFile(tr, hdr, rel, target); err != nil {
			return err
		}
	case tar.TypeSymlink:
		// A link's target is data, resolved only inside the container
		// (bin/sh -> ../../../bin/busybox is common): it is kept as it is.
		// What is confined is where later entries are written (secureDir).
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return fmt.Errorf("symlink %q: %w", rel, err)
		}
	case tar.TypeLink:
		return a.hardlink(hdr, rel, target)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		mode := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[hdr.Typeflag]
		dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
		if err := unix.Mknod(target, mode|perm, int(dev)); err != nil {
			return fmt.Errorf("mknod %q: %w", rel, err)
		}
	default:
		slog.Debug("archive: skipping unsupported tar entry", "name", hdr.Name, "type", hdr.Typeflag)
		delete(a.created, target)
		return nil
	}
	return a.setMeta(target, hdr)
}

func (a *applier) writeFile(tr *tar.Reader, hdr *tar.Header, rel, target string) error {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("create %q: %w", rel, err)
	}
	// Sparse entries are read non-linearly by archive/tar, so they stay
	// verbatim in the replay record instead of referencing the file.
	sparse := hdr.Typeflag == tar.TypeGNUSparse || hasSparsePAX(hdr)
	if a.rec != nil && !sparse {
		a.rec.beginFile(rel)
	}
	var w io.Writer = f
	if a.opts.Check != nil {
		w = checkedWriter{a: a, w: f}
	}
	n, err := io.Copy(w, tr)
	if a.rec != nil && !sparse {
		a.rec.endFile()
	}
	a.size += n
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader) {
			return invalid("tar entry %q: truncated content: %w", hdr.Name, err)
		}
		return fmt.Errorf("write %q: %w", rel, err)
	}
	return nil
}

func hasSparsePAX(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

func (a *applier) hardlink(hdr *tar.Header, rel, target string) error {
	linkRel, err := cleanName(hdr.Linkname)
	if err != nil || linkRel == "." {
		return invalid("tar entry %q: hard link target %q escapes the destination", hdr.Name, hdr.Linkname)
	}
	parent, err := a.secureDir(hdr.Name, path.Dir(linkRel))
	if err != nil {
		return err
	}
	src := filepath.Join(parent, path.Base(linkRel))
	fi, err := os.Lstat(src)
	if err != nil {
		return invalid("tar entry %q: hard link target %q: %w", hdr.Name, hdr.Linkname, err)
	}
	if fi.IsDir() {
		return invalid("tar entry %q: hard link target %q is a directory", hdr.Name, hdr.Linkname)
	}
	// linkat without AT_SYMLINK_FOLLOW links a symlink itself, never its target.
	if err := os.Link(src, target); err != nil {
		return fmt.Errorf("link %q: %w", rel, err)
	}
	return nil
}

func (a *applier) whiteout(rel string, hdr *tar.Header) error {
	base := path.Base(rel)
	dirRel := path.Dir(rel)
	if base != whOpaque && strings.HasPrefix(base, whMeta) {
		return nil
	}
	dir, err := a.secureDir(rel, dirRel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create parent of %q: %w", rel, err)
	}
	if base == whOpaque {
		if a.opts.Whiteouts == WhiteoutOverlay {
			if err := unix.Lsetxattr(dir, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
				return fmt.Errorf("mark %q opaque: %w", dirRel, err)
			}
			return nil
		}
		// Drop everything that came from lower layers, keep what this
		// stream already put there.
		ents, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("opaque %q: %w", dirRel, err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if !a.created[p] {
				if err := os.RemoveAll(p); err != nil {
					return fmt.Errorf("opaque %q: %w", dirRel, err)
				}
			}
		}
		return nil
	}
	name := strings.TrimPrefix(base, whPrefix)
	if name == "" || name == "." || name == ".." {
		return invalid("tar entry %q: invalid whiteout", hdr.Name)
	}
	target := filepath.Join(dir, name)
	if err := os.RemoveAll(target); err != nil {
		return fmt.Errorf("whiteout %q: %w", rel, err)
	}
	if a.opts.Whiteouts == WhiteoutDelete {
		return nil
	}
	if err := unix.Mknod(target, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("whiteout %q: %w", rel, err)
	}
	a.created[target] = true
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return fmt.Errorf("whiteout %q: %w", rel, err)
	}
	return nil
}

// setMeta applies owner, mode, xattrs and times. Ownership goes first:
// chown clears setuid/setgid bits, so the mode is set after it.
func (a *applier) setMeta(target string, hdr *tar.Header) error {
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return fmt.Errorf("chown %q: %w", hdr.Name, err)
	}
	if hdr.Typeflag != tar.TypeSymlink {
		if err := unix.Chmod(target, uint32(hdr.Mode&0o7777)); err != nil {
			return fmt.Errorf("chmod %q: %w", hdr.Name, err)
		}
	}
	for k, v := range hdr.PAXRecords {
		if !strings.HasPrefix(k, xattrPAXPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, xattrPAXPrefix)
		// A layer must not smuggle overlayfs control attributes (redirects,
		// metacopy) into the driver's directories.
		if strings.HasPrefix(name, "trusted.overlay.") {
			continue
		}
		if err := unix.Lsetxattr(target, name, []byte(v), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM) {
				slog.Warn("archive: cannot set xattr", "path", hdr.Name, "xattr", name, "err", err)
				continue
			}
			return fmt.Errorf("setxattr %q on %q: %w", name, hdr.Name, err)
		}
	}
	if hdr.Typeflag == tar.TypeDir {
		a.dirs = append(a.dirs, hdr)
		a.dirPath = append(a.dirPath, target)
		return nil
	}
	return setTimes(target, hdr)
}

func setTimes(target string, hdr *tar.Header) error {
	atime := hdr.AccessTime
	if atime.IsZero() || atime.Before(time.Unix(0, 0)) {
		atime = hdr.ModTime
	}
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times on %q: %w", hdr.Name, err)
	}
	return nil
}
