package dockerfile

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/user"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/errdefs"
)

type copySpec struct {
	name         string // COPY or ADD
	srcs         []string
	dest         string
	from         string
	chown, chmod string
	add          bool
}

// source is one resolved source: a path on the host inside the context
// (or the --from image's rootfs, or a download), and the name it is
// known by in the destination.
type source struct {
	path     string // on the host, already resolved inside its root
	name     string // base name in the destination
	isDir    bool
	archive  bool // ADD: a local tar archive, unpacked at the destination
	download bool
}

// copyStep runs COPY or ADD: resolve the sources inside their root,
// checksum them for the cache, copy them into a layer on the stage's
// image, commit.
func (b *Build) copyStep(ctx context.Context, st *stageState, spec copySpec) error {
	root := b.contextDir
	if spec.from != "" {
		from, err := b.expandWith(spec.from, st.env())
		if err != nil {
			return errdefs.InvalidParameter(err)
		}
		imageID := ""
		if prev, ok := b.stageImage[strings.ToLower(from)]; ok {
			imageID = prev.imageID
		} else {
			img, err := b.baseImage(ctx, from)
			if err != nil {
				return err
			}
			imageID = img.ID
		}
		layer, rootfs, err := b.backend.CreateLayer(ctx, imageID)
		if err != nil {
			return err
		}
		defer b.removeLayer(layer)
		root = rootfs
	}
	var tmpDownloads []string
	defer func() {
		for _, p := range tmpDownloads {
			os.RemoveAll(p)
		}
	}()
	var sources []source
	wildcard := false
	for _, src := range spec.srcs {
		if spec.add && isURL(src) {
			s, tmp, err := b.download(ctx, src)
			if tmp != "" {
				tmpDownloads = append(tmpDownloads, tmp)
			}
			if err != nil {
				return err
			}
			sources = append(sources, s)
			continue
		}
		if strings.HasPrefix(src, "git@") || (spec.add && strings.HasSuffix(src, ".git") && strings.Contains(src, "://")) {
			return errdefs.NotImplemented(fmt.Errorf("%s of a git repository is not supported by the classic builder", spec.name))
		}
		found, wild, err := resolveSources(root, src)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			if spec.from != "" {
				return errdefs.NotFound(fmt.Errorf("%s failed: stat %s: file does not exist", spec.name, src))
			}
			return errdefs.NotFound(fmt.Errorf("%s failed: file not found in build context or excluded by .dockerignore: stat %s: file does not exist", spec.name, src))
		}
		wildcard = wildcard || wild
		for i := range found {
			if spec.add && !found[i].isDir && isArchive(found[i].path) {
				found[i].archive = true
			}
		}
		sources = append(sources, found...)
	}
	destDir := wildcard || len(sources) > 1 || strings.HasSuffix(spec.dest, "/") || strings.HasSuffix(spec.dest, "/.")
	dest := spec.dest
	if !path.IsAbs(dest) {
		wd := st.config.Config.WorkingDir
		if wd == "" {
			wd = "/"
		}
		dest = path.Join(wd, dest)
	}
	if !destDir && len(sources) > 1 {
		return errdefs.InvalidParameter(fmt.Errorf("When using %s with more than one source file, the destination must be a directory and end with a /", spec.name))
	}
	sum, err := checksumSources(sources)
	if err != nil {
		return err
	}
	flags := ""
	if spec.chown != "" {
		flags += "--chown=" + spec.chown + " "
	}
	if spec.chmod != "" {
		flags += "--chmod=" + spec.chmod + " "
	}
	shownDest := spec.dest
	if destDir && !strings.HasSuffix(shownDest, "/") {
		shownDest += "/"
	}
	createdBy := nopCreatedBy(st, fmt.Sprintf("%s %s%s in %s ", spec.name, flags, sum, shownDest))
	if hit, err := b.probeCache(ctx, st, createdBy); err != nil || hit {
		return err
	}
	var mode *os.FileMode
	if spec.chmod != "" {
		m, err := strconv.ParseUint(spec.chmod, 8, 32)
		if err != nil || m > 0o7777 {
			return errdefs.InvalidParameter(fmt.Errorf("invalid chmod parameter %q: it must be an octal number", spec.chmod))
		}
		fm := os.FileMode(m)
		mode = &fm
	}
	layer, rootfs, err := b.backend.CreateLayer(ctx, st.imageID)
	if err != nil {
		return err
	}
	defer b.removeLayer(layer)
	uid, gid := 0, 0
	if spec.chown != "" {
		uid, gid, err = resolveChown(rootfs, spec.chown)
		if err != nil {
			return err
		}
	}
	c := copier{root: rootfs, uid: uid, gid: gid, mode: mode}
	for _, s := range sources {
		if err := c.copySource(ctx, s, dest, destDir); err != nil {
			return fmt.Errorf("%s failed: %w", spec.name, err)
		}
	}
	return b.commit(ctx, st, layer, nextConfig(st, createdBy))
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func hasWildcard(s string) bool { return strings.ContainsAny(s, "*?[") }

// resolveSources finds what src names inside root. A plain path is
// resolved with its symlinks followed inside root (one pointing outside
// stays inside: it names a file of the context, or nothing). A pattern is
// matched component by component against a walk that never follows
// symlinks.
func resolveSources(root, src string) ([]source, bool, error) {
	rel := strings.TrimPrefix(path.Clean("/"+src), "/")
	if !hasWildcard(rel) {
		p, err := securejoin.SecureJoin(root, rel)
		if err != nil {
			return nil, false, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
				return nil, false, nil
			}
			return nil, false, err
		}
		name := path.Base(rel)
		if rel == "" {
			name = "."
		}
		return []source{{path: p, name: name, isDir: fi.IsDir()}}, false, nil
	}
	var out []source
	depth := len(strings.Split(rel, "/"))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		if r == "." {
			return nil
		}
		r = filepath.ToSlash(r)
		n := len(strings.Split(r, "/"))
		if n > depth {
			return filepath.SkipDir
		}
		if n == depth {
			if ok, _ := path.Match(rel, r); ok {
				real, err := securejoin.SecureJoin(root, r)
				if err != nil {
					return err
				}
				if fi, err := os.Stat(real); err == nil {
					out = append(out, source{path: real, name: path.Base(r), isDir: fi.IsDir()})
				}
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, true, err
}

// checksumSources is the cache key of COPY/ADD's sources, in the
// classic builder's form ("file:<hex>", "dir:<hex>", "multi:<hex>"): the
// names, modes, sizes, link targets and contents of everything copied.
// Times do not count, so touching a file keeps the cache.
func checksumSources(srcs []source) (string, error) {
	h := sha256.New()
	for _, s := range srcs {
		fmt.Fprintf(h, "source %s archive=%v\n", s.name, s.archive)
		err := filepath.WalkDir(s.path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(s.path, p)
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			var st unix.Stat_t
			unix.Lstat(p, &st)
			fmt.Fprintf(h, "%s %o %d:%d %d", rel, fi.Mode(), st.Uid, st.Gid, fi.Size())
			switch {
			case fi.Mode()&os.ModeSymlink != 0:
				t, _ := os.Readlink(p)
				fmt.Fprintf(h, " -> %s", t)
			case fi.Mode().IsRegular():
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				fh := sha256.New()
				_, err = io.Copy(fh, f)
				f.Close()
				if err != nil {
					return err
				}
				fmt.Fprintf(h, " %x", fh.Sum(nil))
			}
			h.Write([]byte{'\n'})
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	kind := "multi"
	if len(srcs) == 1 {
		kind = "file"
		if srcs[0].isDir {
			kind = "dir"
		}
	}
	return kind + ":" + hex.EncodeToString(h.Sum(nil)), nil
}

// copier writes sources into a rootfs, every destination path resolved
// inside it.
type copier struct {
	root     string
	uid, gid int
	mode     *os.FileMode
}

func (c *copier) copySource(ctx context.Context, s source, dest string, destDir bool) error {
	switch {
	case s.archive:
		if err := mkdirInRoot(c.root, dest, c.uid, c.gid); err != nil {
			return err
		}
		target, err := securejoin.SecureJoin(c.root, dest)
		if err != nil {
			return err
		}
		f, err := os.Open(s.path)
		if err != nil {
			return err
		}
		defer f.Close()
		r, err := decompressArchive(f)
		if err != nil {
			return err
		}
		_, err = archive.Apply(ctx, r, target, archive.ApplyOptions{Whiteouts: archive.WhiteoutNone})
		return err
	case s.isDir:
		if err := mkdirInRoot(c.root, dest, c.uid, c.gid); err != nil {
			return err
		}
		return c.copyTree(s.path, dest)
	}
	target := dest
	if destDir {
		target = path.Join(dest, s.name)
	} else if p, err := securejoin.SecureJoin(c.root, dest); err == nil {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			target = path.Join(dest, s.name)
		}
	}
	if err := mkdirInRoot(c.root, path.Dir(target), c.uid, c.gid); err != nil {
		return err
	}
	return c.copyEntry(s.path, target)
}

// copyTree copies the contents of src (a directory) into dest.
func (c *copier) copyTree(src, dest string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return c.setMeta(dest, p, true)
		}
		return c.copyEntry(p, path.Join(dest, filepath.ToSlash(rel)))
	})
}

// copyEntry copies one file, directory (itself, not its content: the
// walk does that) or symlink to dest inside the root.
func (c *copier) copyEntry(src, dest string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	parent, err := securejoin.SecureJoin(c.root, path.Dir(dest))
	if err != nil {
		return err
	}
	target := filepath.Join(parent, path.Base(dest))
	if old, err := os.Lstat(target); err == nil && !(old.IsDir() && fi.IsDir()) {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	switch {
	case fi.IsDir():
		if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	case fi.Mode()&os.ModeSymlink != 0:
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(link, target); err != nil {
			return err
		}
		return os.Lchown(target, c.uid, c.gid)
	case fi.Mode().IsRegular():
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	default:
		return nil // devices, sockets and fifos are not copied
	}
	return c.setMeta(target, src, false)
}

// setMeta gives target (a host path, or a rootfs path when inRoot) the
// source's mode and time and the copy's owner.
func (c *copier) setMeta(target, src string, inRoot bool) error {
	if inRoot {
		p, err := securejoin.SecureJoin(c.root, target)
		if err != nil {
			return err
		}
		target = p
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.Lchown(target, c.uid, c.gid); err != nil {
		return err
	}
	mode := fi.Mode().Perm() | fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
	if c.mode != nil {
		mode = *c.mode
	}
	if err := os.Chmod(target, mode); err != nil {
		return err
	}
	return os.Chtimes(target, fi.ModTime(), fi.ModTime())
}

// mkdirInRoot makes dir (an absolute path in the rootfs) and its missing
// parents, owned by uid:gid, resolving every existing component inside
// the root.
func mkdirInRoot(root, dir string, uid, gid int) error {
	cur := "/"
	for _, part := range strings.Split(strings.Trim(path.Clean(dir), "/"), "/") {
		if part == "" {
			continue
		}
		cur = path.Join(cur, part)
		p, err := securejoin.SecureJoin(root, cur)
		if err != nil {
			return err
		}
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("mkdir %s: not a directory", cur)
			}
			continue
		}
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// resolveChown turns --chown's user[:group] into IDs, names looked up in
// the image's /etc/passwd and /etc/group. A user alone is also the group
// (as the classic builder reads it).
func resolveChown(root, spec string) (int, int, error) {
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	if !hasGroup {
		groupPart = userPart
	}
	uid, err := strconv.Atoi(userPart)
	if err != nil {
		p, _ := securejoin.SecureJoin(root, "/etc/passwd")
		users, perr := user.ParsePasswdFileFilter(p, func(u user.User) bool { return u.Name == userPart })
		if perr != nil || len(users) == 0 {
			return 0, 0, errdefs.InvalidParameter(fmt.Errorf("unable to convert uid/gid chown string to host mapping: can't find uid for user %s: no such user: %s", userPart, userPart))
		}
		uid = users[0].Uid
	}
	gid, err := strconv.Atoi(groupPart)
	if err != nil {
		p, _ := securejoin.SecureJoin(root, "/etc/group")
		groups, gerr := user.ParseGroupFileFilter(p, func(g user.Group) bool { return g.Name == groupPart })
		if gerr != nil || len(groups) == 0 {
			return 0, 0, errdefs.InvalidParameter(fmt.Errorf("unable to convert uid/gid chown string to host mapping: can't find gid for group %s: no such group: %s", groupPart, groupPart))
		}
		gid = groups[0].Gid
	}
	return uid, gid, nil
}

// isArchive says whether ADD unpacks the file: a tar, plain or
// compressed with gzip or bzip2.
func isArchive(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	r, err := decompressArchive(f)
	if err != nil {
		return false
	}
	_, err = tar.NewReader(r).Next()
	return err == nil
}

func decompressArchive(f io.Reader) (io.Reader, error) {
	br := bufio.NewReader(f)
	magic, _ := br.Peek(3)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		return gzip.NewReader(br)
	case len(magic) == 3 && string(magic) == "BZh":
		return bzip2.NewReader(br), nil
	}
	return br, nil
}

// download fetches ADD's URL into a temporary directory: the file is
// named after the URL's last path element, mode 0600, and has the
// server's Last-Modified time, as in Docker. It is never unpacked.
func (b *Build) download(ctx context.Context, raw string) (source, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return source{}, "", errdefs.InvalidParameter(err)
	}
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == "" {
		return source{}, "", errdefs.InvalidParameter(fmt.Errorf("cannot determine filename from url: %s", raw))
	}
	dir, err := os.MkdirTemp(b.contextDir+".dl", "")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(b.contextDir+".dl", 0o700); err == nil {
			dir, err = os.MkdirTemp(b.contextDir+".dl", "")
		}
	}
	if err != nil {
		return source{}, "", err
	}
	cleanup := b.contextDir + ".dl"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return source{}, cleanup, errdefs.InvalidParameter(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return source{}, cleanup, fmt.Errorf("ADD %s: %w", raw, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return source{}, cleanup, fmt.Errorf("failed to GET %s with status %s", raw, resp.Status)
	}
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return source{}, cleanup, err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return source{}, cleanup, fmt.Errorf("ADD %s: %w", raw, err)
	}
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		os.Chtimes(p, lm, lm)
	} else {
		os.Chtimes(p, time.Now(), time.Now())
	}
	return source{path: p, name: name, download: true}, cleanup, nil
}
