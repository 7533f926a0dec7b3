package oci

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

var (
	swapOnce      sync.Once
	swapSupported bool
)

// swapLimitSupported reports whether memory+swap limits can be set: on
// cgroup v1 only when the kernel has swap accounting (memsw files).
func swapLimitSupported() bool {
	swapOnce.Do(func() {
		if cgroups.IsCgroup2UnifiedMode() {
			swapSupported = true
			return
		}
		_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
		swapSupported = err == nil
	})
	return swapSupported
}

// hostDevices lists the device nodes under /dev for privileged containers.
// The pseudo filesystems mounted below /dev in every container are skipped.
func hostDevices() ([]specs.LinuxDevice, error) {
	var out []specs.LinuxDevice
	err := filepath.WalkDir("/dev", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a node vanishing under us is not fatal
		}
		if d.IsDir() {
			switch d.Name() {
			case "pts", "shm", "mqueue", "fd", ".lxc", ".udev":
				return filepath.SkipDir
			}
			return nil
		}
		if p == "/dev/console" || p == "/dev/ptmx" {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		var typ string
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			typ = "c"
		case unix.S_IFBLK:
			typ = "b"
		default:
			return nil
		}
		mode := os.FileMode(st.Mode & 0o7777)
		uid, gid := st.Uid, st.Gid
		out = append(out, specs.LinuxDevice{
			Path:     p,
			Type:     typ,
			Major:    int64(unix.Major(st.Rdev)),
			Minor:    int64(unix.Minor(st.Rdev)),
			FileMode: &mode,
			UID:      &uid,
			GID:      &gid,
		})
		return nil
	})
	return out, err
}
