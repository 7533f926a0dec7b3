package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A reserved file is written without needing free space, so that a record
// that must not be lost (a container's exit status, its state) can be
// updated on a full disk. Next to path lives a spare, ".<name>.spare", of
// the same fixed size with its blocks already allocated. WriteReserved
// overwrites the spare in place (no new blocks), syncs it and exchanges it
// with path (renameat2 RENAME_EXCHANGE): path becomes the new content, the
// spare the old one, whose blocks the next write reuses. A crash tears at
// most the spare, never path.
//
// The fixed size means the content is padded: data, then spaces and a
// final newline. Only for formats whose readers ignore trailing white
// space, such as JSON.

// minReserve is the smallest reserved size; it holds an exit status.
const minReserve = 512

// SpareName is the name of path's spare.
func SpareName(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".spare")
}

// reserveSize is the size a reserved file holding n bytes gets: room for
// half as much again, so that a record that grows a little still fits.
// The padding stays shorter than the data, so a file cut in half still
// cuts the data.
func reserveSize(n int) int {
	return max(n+n/2, minReserve)
}

// Reserve makes path's spare of at least size bytes, before path exists,
// so that the first WriteReserved of path needs no free space either.
func Reserve(path string, size int, perm os.FileMode) error {
	return Write(SpareName(path), pad(nil, max(size, minReserve)), perm)
}

// WriteReserved replaces path with data, padded (see above). It uses the
// spare when there is one that data fits in; otherwise (the first write,
// data grown past the spare, a file system without RENAME_EXCHANGE) it
// writes a new file as Write does, which needs free space, and makes a new
// spare if it can. Writes of one path must not run concurrently.
func WriteReserved(path string, data []byte, perm os.FileMode) error {
	spare := SpareName(path)
	spareErr := writeSpare(path, spare, data)
	if spareErr == nil {
		return nil
	}
	size := reserveSize(len(data))
	if err := Write(path, pad(data, size), perm); err != nil {
		if !errors.Is(spareErr, errNoSpare) {
			return spareErr // the first failure says more
		}
		return err
	}
	// Without a spare the next write needs free space: not an error now.
	_ = Write(spare, pad(nil, size), perm)
	return nil
}

// errNoSpare: there is no usable spare; write the ordinary way.
var errNoSpare = errors.New("no usable spare")

func writeSpare(path, spare string, data []byte) error {
	f, err := os.OpenFile(spare, os.O_WRONLY, 0)
	if err != nil {
		return errNoSpare
	}
	st, err := f.Stat()
	if err != nil || st.Size() < int64(len(data)) || !st.Mode().IsRegular() {
		f.Close()
		return errNoSpare
	}
	if _, err := f.WriteAt(pad(data, int(st.Size())), 0); err != nil {
		f.Close()
		return fmt.Errorf("reserved write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("reserved write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("reserved write %s: %w", path, err)
	}
	err = unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT):
		// No path yet (Reserve made the spare): the spare becomes path.
		// Such a file (an exit status) is written once; a later write
		// needs free space.
		if err := os.Rename(spare, path); err != nil {
			return fmt.Errorf("reserved write %s: %w", path, err)
		}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		// No exchange on this file system: the spare becomes path, and
		// a new spare is made if there is room.
		if err := os.Rename(spare, path); err != nil {
			return fmt.Errorf("reserved write %s: %w", path, err)
		}
		_ = Write(spare, pad(nil, int(st.Size())), st.Mode().Perm())
	default:
		return fmt.Errorf("reserved write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// pad returns data followed by spaces and a newline, size bytes in all
// (data itself when it is that long already).
func pad(data []byte, size int) []byte {
	if len(data) >= size {
		return data
	}
	b := make([]byte, size)
	copy(b, data)
	copy(b[len(data):], bytes.Repeat([]byte{' '}, size-len(data)-1))
	b[size-1] = '\n'
	return b
}
