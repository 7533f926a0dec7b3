package overlay2

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"

	// A thread left in another namespace ends with its goroutine.
	_ "github.com/sdengine/engine/pkg/mainthread"
)

// Mount implements graphdriver.Driver. An existing mount is returned as
// is, which is what lets containers survive a daemon restart.
func (d *Driver) Mount(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	merged := filepath.Join(d.dir(id), "merged")
	if _, err := os.Stat(d.Diff(id)); err != nil {
		return "", errdefs.NotFound(fmt.Errorf("overlay2: layer %s: %w", id, err))
	}
	if ok, err := mountinfo.Mounted(merged); err != nil {
		return "", fmt.Errorf("overlay2: %w", err)
	} else if ok {
		return merged, nil
	}
	low, err := d.lowers(id)
	if err != nil {
		return "", err
	}
	rel := func(s string) string { return filepath.Join(id, s) }
	var opts string
	var flags uintptr
	if d.isRW(id) {
		if len(low) == 0 {
			// An image without layers: the container sees only its own dir.
			return merged, bindMount(d.Diff(id), merged, 0)
		}
		opts = fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(low, ":"), rel("diff"), rel("work"))
	} else {
		link, err := os.ReadFile(filepath.Join(d.dir(id), "link"))
		if err != nil {
			return "", fmt.Errorf("overlay2: %w", err)
		}
		if len(low) == 0 {
			return merged, bindMount(d.Diff(id), merged, unix.MS_RDONLY)
		}
		opts = "lowerdir=" + strings.Join(append([]string{linkDir + "/" + string(link)}, low...), ":")
		flags = unix.MS_RDONLY
	}
	if len(opts) >= os.Getpagesize()-1 {
		return "", fmt.Errorf("overlay2: layer %s has too many parents (%d) for one mount", id, len(low))
	}
	if err := mountFrom(d.root, "overlay", rel("merged"), "overlay", flags, opts); err != nil {
		return "", fmt.Errorf("overlay2: mount %s: %w", id, err)
	}
	return merged, nil
}

// MountReadOnly implements graphdriver.Driver: an overlay of the layer
// and its parents as lowerdirs only (no upper, so read-only by nature),
// mounted read-only at target. A base layer alone is bound read-only.
func (d *Driver) MountReadOnly(id, target string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if d.isRW(id) {
		return errdefs.InvalidParameter(fmt.Errorf("overlay2: layer %s is a container's writable layer", id))
	}
	link, err := os.ReadFile(filepath.Join(d.dir(id), "link"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errdefs.NotFound(fmt.Errorf("overlay2: layer %s: %w", id, err))
		}
		return fmt.Errorf("overlay2: %w", err)
	}
	low, err := d.lowers(id)
	if err != nil {
		return err
	}
	flags := uintptr(unix.MS_RDONLY | unix.MS_NODEV | unix.MS_NOSUID)
	if len(low) == 0 {
		return bindMount(d.Diff(id), target, unix.MS_RDONLY)
	}
	// overlayfs needs two lowerdirs at least when there is no upperdir,
	// which holds here.
	opts := "lowerdir=" + strings.Join(append([]string{linkDir + "/" + string(link)}, low...), ":")
	if len(opts) >= os.Getpagesize()-1 {
		return fmt.Errorf("overlay2: layer %s has too many parents (%d) for one mount", id, len(low))
	}
	if err := mountFrom(d.root, "overlay", target, "overlay", flags, opts); err != nil {
		return fmt.Errorf("overlay2: read-only mount of %s at %s: %w", id, target, err)
	}
	return nil
}

// Unmount implements graphdriver.Driver.
func (d *Driver) Unmount(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	merged := filepath.Join(d.dir(id), "merged")
	if ok, err := mountinfo.Mounted(merged); err != nil || !ok {
		return nil
	}
	return unmount(merged)
}

func bindMount(src, dst string, flags uintptr) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("overlay2: bind %s: %w", src, err)
	}
	if flags&unix.MS_RDONLY != 0 {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			unix.Unmount(dst, unix.MNT_DETACH)
			return fmt.Errorf("overlay2: remount ro %s: %w", dst, err)
		}
	}
	return nil
}

// mountFrom performs mount(2) with dir as working directory so relative
// layer paths resolve under the driver root. The chdir happens on a
// dedicated OS thread that first unshares its fs state (CLONE_FS), so
// the rest of the process never sees the changed cwd; the thread is left
// locked and therefore discarded when the goroutine ends.
func mountFrom(dir, source, target, fstype string, flags uintptr, data string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare fs: %w", err)
			return
		}
		if err := unix.Chdir(dir); err != nil {
			errc <- fmt.Errorf("chdir %s: %w", dir, err)
			return
		}
		errc <- unix.Mount(source, target, fstype, flags, data)
	}()
	return <-errc
}

// Supported probes overlayfs with a real two-lower mount in a scratch
// directory under base (so it tests base's filesystem as upper).
func Supported(base string) error {
	dir, err := os.MkdirTemp(base, "overlay-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, s := range []string{"l1", "l2", "up", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, s), 0o755); err != nil {
			return err
		}
	}
	opts := "lowerdir=l2:l1,upperdir=up,workdir=work"
	if err := mountFrom(dir, "overlay", "merged", "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay mount: %w", err)
	}
	defer unix.Unmount(filepath.Join(dir, "merged"), unix.MNT_DETACH)
	// The driver represents deletions as 0/0 char devices in diff dirs.
	if err := unix.Mknod(filepath.Join(dir, "l1", "wh"), unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("whiteout device: %w", err)
	}
	return nil
}
