package volume

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Local is Docker's "local" driver: a directory, or with options a mount
// made on it when a container first uses the volume, as mount(8) would
// make it: type (the filesystem type: tmpfs, nfs, ..., or none for a
// bind), device (what to mount: a host path for o=bind) and o (mount
// options, e.g. size=64m for tmpfs, bind, ro).
type Local struct{}

// Name is "local".
func (Local) Name() string { return DefaultDriver }

var localOpts = map[string]bool{"type": true, "device": true, "o": true, "size": true}

// Validate refuses what Docker's local driver refuses.
func (Local) Validate(opts map[string]string) error {
	for k := range opts {
		if !localOpts[k] {
			return fmt.Errorf("invalid option: %q", k)
		}
	}
	if _, ok := opts["size"]; ok {
		return errors.New("quota size requested but no quota support")
	}
	typ, dev, o := opts["type"], opts["device"], opts["o"]
	if typ == "" && dev == "" && o == "" {
		return nil
	}
	if typ == "" {
		return errors.New("missing required option: \"type\"")
	}
	if dev == "" {
		return errors.New("missing required option: \"device\"")
	}
	flags, _ := mountFlags(o)
	if flags&unix.MS_BIND != 0 || typ == "none" && flags&unix.MS_BIND != 0 {
		if !strings.HasPrefix(dev, "/") {
			return fmt.Errorf("bind device %q must be an absolute path", dev)
		}
		if _, err := os.Stat(dev); err != nil {
			return fmt.Errorf("bind device %q: %w", dev, err)
		}
	}
	return nil
}

func hasMount(opts map[string]string) bool { return opts["type"] != "" || opts["device"] != "" }

// Mount mounts the device on path when the volume has options.
func (Local) Mount(path string, opts map[string]string) error {
	if !hasMount(opts) {
		return nil
	}
	if ok, _ := mountinfo.Mounted(path); ok {
		return nil // left by a daemon that crashed: still the volume's
	}
	flags, data := mountFlags(opts["o"])
	typ := opts["type"]
	if flags&unix.MS_BIND != 0 {
		typ = "none"
	}
	if err := unix.Mount(opts["device"], path, typ, flags, data); err != nil {
		return fmt.Errorf("mount %s (type %s, o %q) on %s: %w", opts["device"], typ, opts["o"], path, err)
	}
	// A read-only bind needs a remount to be read-only.
	if flags&unix.MS_BIND != 0 && flags&unix.MS_RDONLY != 0 {
		if err := unix.Mount("", path, "", flags|unix.MS_REMOUNT, ""); err != nil {
			_ = unix.Unmount(path, unix.MNT_DETACH)
			return fmt.Errorf("remount %s read-only: %w", path, err)
		}
	}
	return nil
}

// Unmount unmounts what Mount mounted.
func (Local) Unmount(path string, opts map[string]string) error {
	if !hasMount(opts) {
		return nil
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}

var flagOpts = map[string]struct {
	clear bool
	flag  uintptr
}{
	"ro": {false, unix.MS_RDONLY}, "rw": {true, unix.MS_RDONLY},
	"nosuid": {false, unix.MS_NOSUID}, "suid": {true, unix.MS_NOSUID},
	"nodev": {false, unix.MS_NODEV}, "dev": {true, unix.MS_NODEV},
	"noexec": {false, unix.MS_NOEXEC}, "exec": {true, unix.MS_NOEXEC},
	"sync": {false, unix.MS_SYNCHRONOUS}, "async": {true, unix.MS_SYNCHRONOUS},
	"noatime": {false, unix.MS_NOATIME}, "atime": {true, unix.MS_NOATIME},
	"nodiratime": {false, unix.MS_NODIRATIME}, "relatime": {false, unix.MS_RELATIME},
	"bind": {false, unix.MS_BIND}, "rbind": {false, unix.MS_BIND | unix.MS_REC},
	"defaults": {false, 0},
}

// mountFlags splits o into mount(2) flags and the filesystem's data.
func mountFlags(o string) (uintptr, string) {
	var flags uintptr
	var data []string
	for _, opt := range strings.Split(o, ",") {
		if opt == "" {
			continue
		}
		if f, ok := flagOpts[opt]; ok {
			if f.clear {
				flags &^= f.flag
			} else {
				flags |= f.flag
			}
			continue
		}
		data = append(data, opt)
	}
	return flags, strings.Join(data, ",")
}

// randomName is an anonymous volume's name: 64 hex digits, as Docker's.
func randomName() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func inode(fi os.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	if st.Nlink < 2 {
		return 0, false
	}
	return st.Ino, true
}
