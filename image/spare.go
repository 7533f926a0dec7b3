package image

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/atomicfile"
)

// A removal must work on a full filesystem, since it is how space is
// freed. Removing an image needs no free space before its space is freed
// (delete.go); the one write that may come before any space is free is
// repositories.json when only a tag goes (or when the image's layers are
// shared), and atomicfile needs a new file for it. For that write the
// store keeps a spare: a file of spareSize allocated bytes, given up when
// a removal's write fails for want of space, and allocated again once
// there is room.
const spareSize = 1 << 20

func (s *Store) sparePath() string { return filepath.Join(s.root, "spare") }

// keepSpare allocates the spare if it is missing and there is room;
// without room it stays missing until a later removal.
func (s *Store) keepSpare() {
	if _, err := os.Lstat(s.sparePath()); err == nil {
		return
	}
	f, err := os.CreateTemp(s.root, ".spare-*")
	if err != nil {
		slog.Debug("image store: cannot allocate the spare yet", "err", err)
		return
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, spareSize)
	if errors.Is(err, unix.EOPNOTSUPP) {
		_, err = f.Write(make([]byte, spareSize))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.sparePath())
	}
	if err != nil {
		os.Remove(f.Name())
		slog.Debug("image store: cannot allocate the spare yet", "err", err)
	}
}

// removeTempFiles removes what an interrupted atomic write or spare
// allocation left in the store's root.
func (s *Store) removeTempFiles() {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && !e.IsDir() {
			os.Remove(filepath.Join(s.root, e.Name()))
		}
	}
}

func isNoSpace(err error) bool { return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) }

// writeForRemoval writes a file a removal needs, giving up the spare to
// do it on a full filesystem.
func (s *Store) writeForRemoval(path string, data []byte) error {
	err := atomicfile.Write(path, data, 0o600)
	if err == nil || !isNoSpace(err) {
		return err
	}
	if rerr := os.Remove(s.sparePath()); rerr != nil {
		return fmt.Errorf("%w (and no spare space is left: %v)", err, rerr)
	}
	slog.Warn("image store: the filesystem is full; giving up the spare space to save", "file", path)
	return atomicfile.Write(path, data, 0o600)
}
