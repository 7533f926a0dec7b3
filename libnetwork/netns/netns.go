// Package netns makes the network namespaces of bridge containers: the
// daemon creates one before the container, keeps it bind-mounted at a path
// of the exec root (as Docker keeps its sandboxes under
// /var/run/docker/netns), sets its interfaces up there, and the runtime
// joins it by that path. The namespace thus outlives neither the daemon's
// knowledge of it nor a crash: a restarted daemon finds it by its path.
package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	// A thread left in another namespace ends with its goroutine.
	_ "github.com/sdengine/engine/pkg/mainthread"
)

// Create makes a new network namespace bind-mounted at path.
func Create(path string) (retErr error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("netns dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("netns file: %w", err)
	}
	f.Close()
	defer func() {
		if retErr != nil {
			os.Remove(path)
		}
	}()
	errc := make(chan error, 1)
	// The namespace is made by one OS thread, which goes back to the
	// daemon's namespace afterwards; one that cannot is never reused (it
	// stays locked and ends with its goroutine).
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("unshare netns: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		merr := unix.Mount(src, path, "", unix.MS_BIND, "")
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(merr, fmt.Errorf("return to the daemon's netns: %w", err))
			return
		}
		runtime.UnlockOSThread()
		if merr != nil {
			merr = fmt.Errorf("bind netns at %s: %w", path, merr)
		}
		errc <- merr
	}()
	return <-errc
}

// Remove unmounts the namespace at path and removes the file; a missing one
// is no error (a repeated clean-up).
func Remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// Open opens the namespace at path (for netlink's handles in it).
func Open(path string) (netns.NsHandle, error) {
	h, err := netns.GetFromPath(path)
	if err != nil {
		return h, fmt.Errorf("open netns %s: %w", path, err)
	}
	return h, nil
}

// Sysctl writes value to /proc/sys/<key> of the namespace at path (the
// net/ keys are per namespace: /proc/sys/net is the one of the thread
// that opens it). It runs on a thread of its own that enters the
// namespace; a thread that cannot come back is not given back to Go.
func Sysctl(path, key, value string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open netns %s: %w", path, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns %s: %w", path, err)
			return
		}
		werr := os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644)
		if err := netns.Set(orig); err != nil {
			// This thread stays in the container's namespace: it ends
			// with the goroutine (still locked).
			errc <- fmt.Errorf("leave netns %s: %w", path, err)
			return
		}
		runtime.UnlockOSThread()
		if werr != nil {
			werr = fmt.Errorf("sysctl %s in %s: %w", key, path, werr)
		}
		errc <- werr
	}()
	return <-errc
}
