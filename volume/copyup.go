package volume

import (
	"errors"
	"os"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"

	"github.com/sdengine/engine/pkg/fscopy"
)

// CopyUp fills an empty volume at dst (its data directory) from what the
// container's rootfs holds at path, as Docker does when a container first
// mounts a volume: contents, owners, modes, times, xattrs, hard links and
// symlinks (copied as links, never followed), and the owner and mode of
// the directory itself.
// A volume that holds anything is left as it is; so is one whose path is
// missing or not a directory in the image. path is resolved inside rootfs:
// a symlink in the image cannot point the copy outside it.
func CopyUp(rootfs, path, dst string) error {
	entries, err := os.ReadDir(dst)
	if errors.Is(err, syscall.ENOTDIR) {
		return nil // a file (a volume's subpath): nothing to fill
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return nil
	}
	src, err := securejoin.SecureJoin(rootfs, path)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if !fi.IsDir() {
		return nil
	}
	return fscopy.Tree(src, dst)
}
