package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TarDir writes dir's tree to w as an uncompressed tar, in lexical order
// so the same tree always gives the same stream. Owners are numeric (the
// host's user database means nothing for a container tree), hard links
// are kept, and overlayfs whiteouts (0/0 char devices, opaque dirs) are
// turned back into ".wh." entries.
func TarDir(dir string, w io.Writer) error { return tarDir(dir, w, nil) }

// tarDir is TarDir less the relative paths in skip (a directory with all
// below it).
func tarDir(dir string, w io.Writer, skip map[string]bool) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return tarEntry(tw, p, filepath.ToSlash(rel), links)
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", dir, err)
	}
	return tw.Close()
}

func tarEntry(tw *tar.Writer, p, rel string, links map[[2]uint64]string) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: p, Err: err}
	}
	hdr := &tar.Header{
		Name:    rel,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()).Truncate(time.Second),
		Format:  tar.FormatPAX,
	}
	ftype := st.Mode & unix.S_IFMT
	if ftype == unix.S_IFCHR && st.Rdev == 0 {
		// overlayfs whiteout: the file was deleted in this layer.
		dirPart, base := splitRel(rel)
		return tw.WriteHeader(&tar.Header{Name: dirPart + whPrefix + base, Typeflag: tar.TypeReg,
			Mode: 0o600, ModTime: hdr.ModTime, Format: tar.FormatPAX})
	}
	switch ftype {
	case unix.S_IFDIR:
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	case unix.S_IFREG:
		key := [2]uint64{st.Dev, st.Ino}
		if first, ok := links[key]; ok && st.Nlink > 1 {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
		} else {
			if st.Nlink > 1 {
				links[key] = rel
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
		}
	case unix.S_IFLNK:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	case unix.S_IFCHR, unix.S_IFBLK:
		hdr.Typeflag = tar.TypeChar
		if ftype == unix.S_IFBLK {
			hdr.Typeflag = tar.TypeBlock
		}
		hdr.Devmajor, hdr.Devminor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
	case unix.S_IFIFO:
		hdr.Typeflag = tar.TypeFifo
	default:
		return nil // sockets cannot be archived
	}
	opaque, err := addXattrs(p, hdr)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeReg && hdr.Size > 0 {
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, hdr.Size)
		f.Close()
		if err != nil {
			return err
		}
	}
	if opaque {
		return tw.WriteHeader(&tar.Header{Name: rel + "/" + whOpaque, Typeflag: tar.TypeReg,
			Mode: 0o600, ModTime: hdr.ModTime, Format: tar.FormatPAX})
	}
	return nil
}

func splitRel(rel string) (string, string) {
	i := strings.LastIndex(rel, "/")
	return rel[:i+1], rel[i+1:]
}

// addXattrs copies p's extended attributes into PAX records, except the
// overlayfs ones, and reports whether p is an opaque overlay directory.
func addXattrs(p string, hdr *tar.Header) (bool, error) {
	names, err := listXattrs(p)
	if err != nil {
		return false, err
	}
	opaque := false
	for _, name := range names {
		buf := make([]byte, 4096)
		n, err := unix.Lgetxattr(p, name, buf)
		if errors.Is(err, unix.ERANGE) {
			sz, err2 := unix.Lgetxattr(p, name, nil)
			if err2 != nil {
				return false, err2
			}
			buf = make([]byte, sz)
			n, err = unix.Lgetxattr(p, name, buf)
		}
		if errors.Is(err, unix.ENODATA) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("getxattr %s %s: %w", p, name, err)
		}
		if name == "trusted.overlay.opaque" {
			opaque = string(buf[:n]) == "y"
			continue
		}
		if strings.HasPrefix(name, "trusted.overlay.") {
			continue
		}
		if hdr.PAXRecords == nil {
			hdr.PAXRecords = map[string]string{}
		}
		hdr.PAXRecords[xattrPAXPrefix+name] = string(buf[:n])
	}
	return opaque, nil
}

func listXattrs(p string) ([]string, error) {
	sz, err := unix.Llistxattr(p, nil)
	if errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listxattr %s: %w", p, err)
	}
	if sz == 0 {
		return nil, nil
	}
	buf := make([]byte, sz)
	sz, err = unix.Llistxattr(p, buf)
	if err != nil {
		return nil, fmt.Errorf("listxattr %s: %w", p, err)
	}
	var names []string
	for _, n := range strings.Split(string(buf[:sz]), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}
