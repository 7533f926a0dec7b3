package dockerfile

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// decompressContext undoes gzip or bzip2 compression of a build context
// (the CLI sends plain tar; docker-py and curl users may compress).
func decompressContext(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(6)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid build context: %w", err))
		}
		return gz, nil
	case len(magic) >= 3 && string(magic[:3]) == "BZh":
		return bzip2.NewReader(br), nil
	case len(magic) >= 6 && bytes.Equal(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return nil, errdefs.InvalidParameter(fmt.Errorf("xz-compressed build contexts are not supported: send a plain, gzip or bzip2 tar"))
	}
	return br, nil
}

// cleanContextName maps a context entry's name into the context: leading
// slashes and ".." that would climb out are dropped, as Docker does
// ("../foo" is "foo"), never refused.
func cleanContextName(name string) string {
	rel := strings.TrimPrefix(path.Clean("/"+name), "/")
	return rel
}

// extractContext unpacks the context tar into dir. Every path is kept
// inside dir: names are cleaned, parents are resolved inside dir (a
// symlink in the context cannot redirect a later entry outside), and a
// hard link may only name an earlier entry. Symlinks are stored as they
// are: whatever reads them later resolves them inside the context.
// Device nodes are not kept. It returns the number of entries.
func extractContext(r io.Reader, dir string) error {
	src, err := decompressContext(r)
	if err != nil {
		return err
	}
	tr := tar.NewReader(src)
	type dirTime struct {
		path string
		t    time.Time
	}
	var dirs []dirTime
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return errdefs.InvalidParameter(fmt.Errorf("invalid build context: %w", err))
		}
		rel := cleanContextName(hdr.Name)
		if rel == "" {
			continue
		}
		parent, err := securejoin.SecureJoin(dir, path.Dir(rel))
		if err != nil {
			return fmt.Errorf("build context: %s: %w", hdr.Name, err)
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("build context: %w", err)
		}
		target := filepath.Join(parent, path.Base(rel))
		if fi, err := os.Lstat(target); err == nil && !(fi.IsDir() && hdr.Typeflag == tar.TypeDir) {
			if err := os.RemoveAll(target); err != nil {
				return fmt.Errorf("build context: %w", err)
			}
		}
		mode := os.FileMode(hdr.Mode & 0o777)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("build context: %w", err)
			}
			os.Chmod(target, mode|0o700)
			dirs = append(dirs, dirTime{target, hdr.ModTime})
			continue
		//lint:ignore SA1019 old (V7) tars still carry TypeRegA
		case tar.TypeReg, tar.TypeRegA:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
			if err != nil {
				return fmt.Errorf("build context: %w", err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("build context: %s: %w", hdr.Name, err)
			}
			if err := os.Chmod(target, mode|0o600); err != nil {
				return fmt.Errorf("build context: %w", err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return fmt.Errorf("build context: %w", err)
			}
			continue
		case tar.TypeLink:
			old, err := securejoin.SecureJoin(dir, cleanContextName(hdr.Linkname))
			if err != nil {
				return fmt.Errorf("build context: %s: %w", hdr.Name, err)
			}
			if fi, err := os.Lstat(old); err != nil || !fi.Mode().IsRegular() {
				return errdefs.InvalidParameter(fmt.Errorf("build context: hard link %s to %s: not a file of the context", hdr.Name, hdr.Linkname))
			}
			if err := os.Link(old, target); err != nil {
				return fmt.Errorf("build context: %w", err)
			}
			continue
		default:
			continue
		}
		os.Chtimes(target, hdr.ModTime, hdr.ModTime)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Chtimes(dirs[i].path, dirs[i].t, dirs[i].t)
	}
	return nil
}

// readDockerignore returns the .dockerignore patterns of the context.
func readDockerignore(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, ".dockerignore"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("error reading .dockerignore: %w", err))
	}
	return patterns, nil
}

// applyDockerignore removes from the context what .dockerignore
// excludes (the CLI does the same before sending; other clients may
// not). The Dockerfile and .dockerignore stay, as in Docker, so the
// build can read them.
func applyDockerignore(dir, dockerfile string) error {
	patterns, err := readDockerignore(dir)
	if err != nil || len(patterns) == 0 {
		return err
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid .dockerignore: %w", err))
	}
	keep := map[string]bool{".dockerignore": true, filepath.Clean(dockerfile): true}
	var remove []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || keep[rel] {
			return nil
		}
		m, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return err
		}
		if m {
			remove = append(remove, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Children first (WalkDir lists a directory before its entries), so
	// an excluded directory keeps an exception ("!dir/keep") inside it.
	for i := len(remove) - 1; i >= 0; i-- {
		p := remove[i]
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			os.Remove(p) // only if nothing was kept in it
			continue
		}
		os.Remove(p)
	}
	return nil
}
