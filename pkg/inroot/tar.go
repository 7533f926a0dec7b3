package inroot

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Tar writes p (inside the root) to w as Docker's GET .../archive does:
// entries are named after base (the last element of the path as the user
// wrote it: "foo", "." or "/"), a directory's with a trailing "/" and its
// children under it. Symlinks are archived as links, never followed below
// p; p's own last component is followed only if FollowLast(p).
func (r *Root) Tar(p, base string, w io.Writer) error {
	e, err := r.Lookup(p, FollowLast(p))
	if err != nil {
		return err
	}
	defer e.Close()
	tw := tar.NewWriter(w)
	t := &tarrer{tw: tw, links: map[[2]uint64]string{}}
	if err := t.entry(e.Parent, e.Name, base, e.St); err != nil {
		return err
	}
	return tw.Close()
}

type tarrer struct {
	tw    *tar.Writer
	links map[[2]uint64]string
}

func childName(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return strings.TrimSuffix(parent, "/") + "/" + name
}

// entry archives name in dir (name "": dir itself) as arcName.
func (t *tarrer) entry(dir *os.File, name, arcName string, st unix.Stat_t) error {
	hdr := &tar.Header{
		Name:    arcName,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()),
		Format:  tar.FormatPAX,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		f, err := openOrReopen(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		defer f.Close()
		hdr.Typeflag = tar.TypeDir
		if !strings.HasSuffix(hdr.Name, "/") {
			hdr.Name += "/"
		}
		if err := t.tw.WriteHeader(hdr); err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		if err != nil {
			return fmt.Errorf("read directory %s: %w", arcName, err)
		}
		slices.Sort(names)
		for _, n := range names {
			var cst unix.Stat_t
			if err := unix.Fstatat(int(f.Fd()), n, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue // removed meanwhile
				}
				return err
			}
			if err := t.entry(f, n, childName(arcName, n), cst); err != nil {
				return err
			}
		}
		return nil
	case unix.S_IFREG:
		key := [2]uint64{st.Dev, st.Ino}
		if st.Nlink > 1 {
			if first, ok := t.links[key]; ok {
				hdr.Typeflag = tar.TypeLink
				hdr.Linkname = first
				return t.tw.WriteHeader(hdr)
			}
			t.links[key] = arcName
		}
		// O_NONBLOCK: a file swapped for a FIFO must not block the copy.
		f, err := openOrReopen(dir, name, unix.O_RDONLY|unix.O_NONBLOCK)
		if err != nil {
			return err
		}
		defer f.Close()
		var fst unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &fst); err != nil {
			return err
		}
		if fst.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("%s changed while it was copied", arcName)
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = fst.Size
		if err := t.tw.WriteHeader(hdr); err != nil {
			return err
		}
		// A file that shrinks meanwhile is padded, one that grows cut, so
		// the archive stays well-formed.
		n, err := io.Copy(t.tw, io.LimitReader(f, fst.Size))
		if err != nil {
			return err
		}
		if n < fst.Size {
			_, err = io.CopyN(t.tw, zeros{}, fst.Size-n)
		}
		return err
	case unix.S_IFLNK:
		target, err := readlinkat(dir, name)
		if err != nil {
			return err
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
		return t.tw.WriteHeader(hdr)
	case unix.S_IFCHR, unix.S_IFBLK:
		hdr.Typeflag = tar.TypeChar
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			hdr.Typeflag = tar.TypeBlock
		}
		hdr.Devmajor, hdr.Devminor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
		return t.tw.WriteHeader(hdr)
	case unix.S_IFIFO:
		hdr.Typeflag = tar.TypeFifo
		return t.tw.WriteHeader(hdr)
	}
	return nil // sockets are not archived
}

func openOrReopen(dir *os.File, name string, flags int) (*os.File, error) {
	e := Entry{Parent: dir, Name: name}
	return e.Open(flags)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
