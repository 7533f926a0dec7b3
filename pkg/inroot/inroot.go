// Package inroot reads and writes paths inside a root directory (a
// container's filesystem) that a hostile party may be changing at the same
// time, without ever reaching outside it: every lookup is made from a
// directory handle inside the root with openat2(RESOLVE_IN_ROOT) semantics
// (github.com/cyphar/filepath-securejoin/pathrs-lite), the last component
// is then reached from its parent's handle with O_NOFOLLOW /
// AT_SYMLINK_NOFOLLOW, and nothing is ever done by path name from the
// host's point of view. A symlink, absolute or relative, or a ".." chain,
// swapped in at any moment, resolves inside the root or not at all.
package inroot

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// Root is an open root directory.
type Root struct {
	path string
	f    *os.File // O_PATH handle
}

// Open opens the root directory dir.
func Open(dir string) (*Root, error) {
	f, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &Root{path: dir, f: f}, nil
}

// Close releases the root's handle.
func (r *Root) Close() error { return r.f.Close() }

// Stat is what Docker's X-Docker-Container-Path-Stat header carries.
type Stat struct {
	Name       string
	Size       int64
	Mode       os.FileMode
	Mtime      time.Time
	LinkTarget string
}

// Clean makes p absolute and clean; ".." cannot climb above "/".
func Clean(p string) string { return path.Clean("/" + p) }

// FollowLast reports whether the last component of p, as the user wrote
// it, is to be followed: a trailing "/" or "/." says it is a directory
// (Docker's rule for cp).
func FollowLast(p string) bool {
	return p == "." || strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.")
}

// Entry is the object a path names, reached without following its last
// component (unless asked): its parent's handle and its name in it.
type Entry struct {
	Parent *os.File // O_PATH handle of the parent directory
	Name   string   // "" when Parent is the object itself
	St     unix.Stat_t
}

// Close releases the entry's parent handle.
func (e *Entry) Close() { e.Parent.Close() }

// IsDir reports whether the entry is a directory.
func (e *Entry) IsDir() bool { return e.St.Mode&unix.S_IFMT == unix.S_IFDIR }

// Open opens the entry itself (never through a symlink) with flags.
func (e *Entry) Open(flags int) (*os.File, error) {
	if e.Name == "" {
		return pathrs.Reopen(e.Parent, flags|unix.O_CLOEXEC)
	}
	return openAt(e.Parent, e.Name, flags)
}

// Lookup finds p inside the root. With follow, a symlink as the last
// component is resolved (inside the root) too.
func (r *Root) Lookup(p string, follow bool) (*Entry, error) {
	clean := Clean(p)
	var parent *os.File
	var name string
	var err error
	if clean == "/" || follow {
		// The object itself, resolved in the root; its parent is itself
		// reached as ".".
		parent, err = pathrs.OpenatInRoot(r.f, clean)
		name = ""
	} else {
		parent, err = pathrs.OpenatInRoot(r.f, path.Dir(clean))
		name = path.Base(clean)
	}
	if err != nil {
		return nil, err
	}
	e := &Entry{Parent: parent, Name: name}
	if err := unix.Fstatat(int(parent.Fd()), name, &e.St, unix.AT_SYMLINK_NOFOLLOW|emptyPath(name)); err != nil {
		parent.Close()
		return nil, &os.PathError{Op: "lstat", Path: clean, Err: err}
	}
	if e.St.Mode&unix.S_IFMT != unix.S_IFDIR && FollowLast(p) {
		parent.Close()
		return nil, &os.PathError{Op: "lstat", Path: clean, Err: unix.ENOTDIR}
	}
	return e, nil
}

func emptyPath(name string) int {
	if name == "" {
		return unix.AT_EMPTY_PATH
	}
	return 0
}

// Stat describes p as Docker's cp does: the name as given, and for a
// symlink the absolute path (inside the root) it resolves to.
func (r *Root) Stat(p string) (Stat, error) {
	e, err := r.Lookup(p, FollowLast(p))
	if err != nil {
		return Stat{}, err
	}
	defer e.Close()
	st := Stat{
		Name:  path.Base(Clean(p)),
		Size:  e.St.Size,
		Mode:  fileMode(e.St.Mode),
		Mtime: time.Unix(e.St.Mtim.Unix()),
	}
	if e.St.Mode&unix.S_IFMT == unix.S_IFLNK {
		// Resolved by the kernel inside the root: the path of the handle,
		// relative to the root, is where the link leads.
		h, err := pathrs.OpenatInRoot(r.f, Clean(p))
		if err == nil {
			st.LinkTarget = r.inRootPath(h)
			h.Close()
		} else if errors.Is(err, os.ErrNotExist) {
			// A dangling link: its target as written, made absolute.
			if t, err := readlinkat(e.Parent, e.Name); err == nil {
				st.LinkTarget = path.Join(path.Dir(Clean(p)), t)
				if path.IsAbs(t) {
					st.LinkTarget = Clean(t)
				}
			}
		}
	}
	return st, nil
}

// inRootPath is the path inside the root of an open handle.
func (r *Root) inRootPath(h *os.File) string {
	host, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", h.Fd()))
	if err != nil {
		return ""
	}
	rootHost, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", r.f.Fd()))
	if err != nil {
		return ""
	}
	if host == rootHost {
		return "/"
	}
	rel, ok := strings.CutPrefix(host, strings.TrimSuffix(rootHost, "/")+"/")
	if !ok {
		return ""
	}
	return "/" + rel
}

func readlinkat(dir *os.File, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(int(dir.Fd()), name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// fileMode is a stat mode as Go's os.FileMode, as Docker's stat header has
// it.
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	case unix.S_IFBLK:
		mode |= os.ModeDevice
	case unix.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFIFO:
		mode |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= os.ModeSocket
	}
	if m&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

// openAt opens name in dir without following a symlink; flags are added
// to O_NOFOLLOW|O_CLOEXEC.
func openAt(dir *os.File, name string, flags int) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
