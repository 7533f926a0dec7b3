package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// TarChanges writes, as a layer tar, what differs in dir from base (both
// full trees; base "" is empty): entries added or modified (by type, mode,
// owner, size, mtime or link target) and a ".wh." entry for each path of
// base that dir no longer has. A directory whose own metadata is
// unchanged is written only when something below it is. It is how the
// vfs driver, which keeps full copies, gets a container's changes.
func TarChanges(base, dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{}
	written := map[string]bool{}
	var writeParents func(rel string) error
	writeParents = func(rel string) error {
		parent := filepath.Dir(rel)
		if parent == "." || written[parent] {
			return nil
		}
		if err := writeParents(parent); err != nil {
			return err
		}
		written[parent] = true
		return tarEntry(tw, filepath.Join(dir, parent), filepath.ToSlash(parent), links)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if base != "" && sameEntry(filepath.Join(base, rel), p) {
			return nil
		}
		if err := writeParents(rel); err != nil {
			return err
		}
		written[rel] = true
		return tarEntry(tw, p, filepath.ToSlash(rel), links)
	})
	if err != nil {
		return fmt.Errorf("diff %s: %w", dir, err)
	}
	if base != "" {
		err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(base, p)
			if err != nil || rel == "." {
				return err
			}
			if _, err := os.Lstat(filepath.Join(dir, rel)); !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if err := writeParents(rel); err != nil {
				return err
			}
			dirPart, name := splitRel(filepath.ToSlash(rel))
			if err := tw.WriteHeader(&tar.Header{Name: dirPart + whPrefix + name, Typeflag: tar.TypeReg,
				Mode: 0o600, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
				return err
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("diff %s: %w", dir, err)
		}
	}
	return tw.Close()
}

// sameEntry reports whether a (in base) and b have the same type, mode,
// owner, size, mtime and, for symlinks, target.
func sameEntry(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Lstat(a, &sa) != nil || unix.Lstat(b, &sb) != nil {
		return false
	}
	if sa.Mode != sb.Mode || sa.Uid != sb.Uid || sa.Gid != sb.Gid || sa.Rdev != sb.Rdev {
		return false
	}
	if sa.Mode&unix.S_IFMT == unix.S_IFDIR {
		return sa.Mtim == sb.Mtim
	}
	if sa.Size != sb.Size || sa.Mtim != sb.Mtim {
		return false
	}
	if sa.Mode&unix.S_IFMT == unix.S_IFLNK {
		ta, _ := os.Readlink(a)
		tb, _ := os.Readlink(b)
		return ta == tb
	}
	return true
}

// TarDirExcept is TarDir less the engine's mountpoints: each of
// mountpoints (relative paths) that is an empty file or an empty
// directory in dir is left out, and so is a directory that holds nothing
// else (the /etc that making /etc/hostname copied up). They are what
// the runtime creates in a container's writable layer to mount on,
// never the container's own changes, as Docker's init layer keeps them
// out of a commit.
func TarDirExcept(dir string, w io.Writer, mountpoints []string) error {
	skip := map[string]bool{}
	for _, m := range mountpoints {
		m = filepath.Clean(m)
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(dir, m), &st) != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if st.Size != 0 {
				continue
			}
		case unix.S_IFDIR:
			if ents, err := os.ReadDir(filepath.Join(dir, m)); err != nil || len(ents) > 0 {
				continue
			}
		default:
			continue
		}
		skip[m] = true
		// Parents left holding nothing else go too.
		for p := filepath.Dir(m); p != "."; p = filepath.Dir(p) {
			ents, err := os.ReadDir(filepath.Join(dir, p))
			if err != nil {
				break
			}
			all := true
			for _, e := range ents {
				if !skip[filepath.Join(p, e.Name())] {
					all = false
					break
				}
			}
			if opaque, _ := addXattrs(filepath.Join(dir, p), &tar.Header{}); opaque || !all {
				break
			}
			skip[p] = true
		}
	}
	return tarDir(dir, w, skip)
}
