package oci

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"
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
		dev, err := deviceAt(p)
		if err != nil {
			return nil // not a device node, or gone
		}
		out = append(out, dev)
		return nil
	})
	return out, err
}
