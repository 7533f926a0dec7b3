// Package podns pins a pod's namespaces (network, IPC, UTS) as files, so
// that the pod's containers can join them without a pause process.
//
// A namespace lives as long as a process or a mount holds it. A pod's
// namespaces are made on a thread of the daemon that unshares them,
// bind-mounts its /proc/thread-self/ns/* files below the pod's directory and
// goes back to the namespaces it had; the bind mounts alone keep the pod's
// namespaces alive until Release.
package podns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	// A thread left in another namespace ends with its goroutine.
	_ "github.com/sdengine/engine/pkg/mainthread"
)

// Options says which namespaces to pin and the UTS namespace's host name.
type Options struct {
	Net, IPC, UTS bool
	Hostname      string
}

// Namespaces are the paths of the pinned namespaces ("" for one not pinned:
// the pod shares the host's).
type Namespaces struct{ Net, IPC, UTS string }

// kinds are the namespaces Pin knows, by the name of their file.
var kinds = []struct {
	name string
	flag int
}{
	{"net", unix.CLONE_NEWNET},
	{"ipc", unix.CLONE_NEWIPC},
	{"uts", unix.CLONE_NEWUTS},
}

// Pin creates the namespaces asked for and bind-mounts them below dir
// (made if missing). On error nothing is left pinned.
func Pin(dir string, opts Options) (*Namespaces, error) {
	want := map[string]bool{"net": opts.Net, "ipc": opts.IPC, "uts": opts.UTS}
	var flags int
	for _, k := range kinds {
		if want[k.name] {
			flags |= k.flag
		}
	}
	if flags == 0 {
		return &Namespaces{}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("podns: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pinOnThread(dir, flags, opts.Hostname) }()
	if err := <-errc; err != nil {
		_ = Release(dir)
		return nil, err
	}
	ns := &Namespaces{}
	if opts.Net {
		ns.Net = filepath.Join(dir, "net")
	}
	if opts.IPC {
		ns.IPC = filepath.Join(dir, "ipc")
	}
	if opts.UTS {
		ns.UTS = filepath.Join(dir, "uts")
	}
	return ns, nil
}

// pinOnThread runs on a goroutine of its own, locked to its thread while
// the thread is in other namespaces. It returns to the thread's own
// namespaces before unlocking: if it cannot, the thread stays locked and Go
// ends it with the goroutine; that must not be left to chance, because the
// thread may be the process's main one, whose namespaces /proc/self shows
// and which Go parks rather than ends.
func pinOnThread(dir string, flags int, hostname string) (err error) {
	runtime.LockOSThread()
	var back []*os.File
	for _, k := range kinds {
		if flags&k.flag == 0 {
			continue
		}
		f, err := os.Open("/proc/thread-self/ns/" + k.name)
		if err != nil {
			closeAll(back)
			runtime.UnlockOSThread()
			return fmt.Errorf("podns: %w", err)
		}
		back = append(back, f)
	}
	defer func() {
		defer closeAll(back)
		for _, f := range back {
			if serr := unix.Setns(int(f.Fd()), 0); serr != nil {
				err = errors.Join(err, fmt.Errorf("podns: return to the daemon's namespaces: %w", serr))
				return // the thread stays locked: Go discards it
			}
		}
		runtime.UnlockOSThread()
	}()
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("podns: unshare: %w", err)
	}
	if flags&unix.CLONE_NEWUTS != 0 && hostname != "" {
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			return fmt.Errorf("podns: set host name %q: %w", hostname, err)
		}
	}
	if flags&unix.CLONE_NEWNET != 0 {
		// A new network namespace has lo down; every pod expects it up
		// whatever the CNI configuration says.
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("podns: bring lo up: %w", err)
		}
	}
	for _, k := range kinds {
		if flags&k.flag == 0 {
			continue
		}
		target := filepath.Join(dir, k.name)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o400)
		if err != nil {
			return fmt.Errorf("podns: %w", err)
		}
		f.Close()
		src := "/proc/thread-self/ns/" + k.name
		if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("podns: pin %s namespace: %w", k.name, err)
		}
	}
	return nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// Release unmounts and removes what Pin made below dir; it is idempotent
// (a missing dir or namespace is not an error).
func Release(dir string) error {
	var errs []error
	for _, k := range kinds {
		target := filepath.Join(dir, k.name)
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("podns: unpin %s: %w", k.name, err))
			continue
		}
		if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("podns: %w", err))
		}
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		errs = append(errs, fmt.Errorf("podns: %w", err))
	}
	return errors.Join(errs...)
}
