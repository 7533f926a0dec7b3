// Package fscopy copies directory trees faithfully: what the vfs storage
// driver needs to make a layer from its parent, and what a volume's first
// use needs to take the image's content.
package fscopy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Tree duplicates src at dst keeping owners, modes, times, xattrs, hard
// links and special files; symlinks are copied as links, never followed.
// dst is made, or may be an existing empty directory, which then takes
// src's owner, mode, xattrs and times. Directory times are set after their
// content is written, deepest first.
func Tree(src, dst string) error {
	links := map[[2]uint64]string{}
	type dirTime struct {
		path string
		ts   []unix.Timespec
	}
	var dirs []dirTime
	err := filepath.WalkDir(src, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return &os.PathError{Op: "lstat", Path: p, Err: err}
		}
		ftype := st.Mode & unix.S_IFMT
		if ftype != unix.S_IFDIR && st.Nlink > 1 {
			key := [2]uint64{st.Dev, st.Ino}
			if first, ok := links[key]; ok {
				return os.Link(first, target)
			}
			links[key] = target
		}
		switch ftype {
		case unix.S_IFDIR:
			if err := os.Mkdir(target, 0o700); err != nil && !(rel == "." && errors.Is(err, fs.ErrExist)) {
				return err
			}
		case unix.S_IFREG:
			if err := copyFile(p, target); err != nil {
				return err
			}
		case unix.S_IFLNK:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(l, target); err != nil {
				return err
			}
		case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
			if err := unix.Mknod(target, st.Mode, int(st.Rdev)); err != nil {
				return &os.PathError{Op: "mknod", Path: target, Err: err}
			}
		default:
			return fmt.Errorf("%s: unsupported file type %o", p, ftype)
		}
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
		if ftype != unix.S_IFLNK {
			if err := unix.Chmod(target, st.Mode&0o7777); err != nil {
				return &os.PathError{Op: "chmod", Path: target, Err: err}
			}
		}
		if err := copyXattrs(p, target); err != nil {
			return err
		}
		ts := []unix.Timespec{st.Atim, st.Mtim}
		if ftype == unix.S_IFDIR {
			dirs = append(dirs, dirTime{target, ts})
			return nil
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, dirs[i].path, dirs[i].ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	// io.Copy between files uses copy_file_range, which reflinks or
	// copies in-kernel where the filesystem allows.
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyXattrs(src, dst string) error {
	sz, err := unix.Llistxattr(src, nil)
	if errors.Is(err, unix.ENOTSUP) || sz == 0 {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "listxattr", Path: src, Err: err}
	}
	buf := make([]byte, sz)
	sz, err = unix.Llistxattr(src, buf)
	if err != nil {
		return &os.PathError{Op: "listxattr", Path: src, Err: err}
	}
	for _, name := range strings.Split(string(buf[:sz]), "\x00") {
		if name == "" {
			continue
		}
		vsz, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			continue
		}
		val := make([]byte, vsz)
		vsz, err = unix.Lgetxattr(src, name, val)
		if err != nil {
			continue
		}
		if err := unix.Lsetxattr(dst, name, val[:vsz], 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
			return &os.PathError{Op: "setxattr " + name, Path: dst, Err: err}
		}
	}
	return nil
}
