package volume

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
)

// CopyUp fills an empty volume at dst (its data directory) from what the
// container's rootfs holds at path, as Docker does when a container first
// mounts a volume: contents, owners, modes, times and symlinks (copied as
// links, never followed), and the owner and mode of the directory itself.
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
	if err := copyTree(src, dst); err != nil {
		return err
	}
	return copyMeta(src, dst, fi)
}

func copyTree(src, dst string) error {
	des, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, de := range des {
		s, d := filepath.Join(src, de.Name()), filepath.Join(dst, de.Name())
		fi, err := os.Lstat(s)
		if err != nil {
			return err
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
			if err := copyTree(s, d); err != nil {
				return err
			}
		case m.IsRegular():
			if err := copyFile(s, d); err != nil {
				return err
			}
		case m&os.ModeSymlink != 0:
			target, err := os.Readlink(s)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, d); err != nil {
				return err
			}
		case m&(os.ModeDevice|os.ModeCharDevice|os.ModeNamedPipe) != 0:
			var st unix.Stat_t
			if err := unix.Lstat(s, &st); err != nil {
				return err
			}
			if err := unix.Mknod(d, st.Mode, int(st.Rdev)); err != nil {
				return fmt.Errorf("mknod %s: %w", d, err)
			}
		default:
			continue // sockets are not copied
		}
		if err := copyMeta(s, d, fi); err != nil {
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
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyMeta gives dst src's owner, mode and times, without following a
// symlink.
func copyMeta(src, dst string, fi os.FileInfo) error {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	if err := unix.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("chown %s: %w", dst, err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		if err := unix.Chmod(dst, st.Mode&0o7777); err != nil {
			return fmt.Errorf("chmod %s: %w", dst, err)
		}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times of %s: %w", dst, err)
	}
	return nil
}
