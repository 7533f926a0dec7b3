package runconfig

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// cgroupRoot is where the cgroup hierarchies are mounted (a variable for
// tests).
var cgroupRoot = "/sys/fs/cgroup"

// ProbeHost reads what ValidateResources needs from this machine. It is
// cheap (a few small files), so it is read afresh for each request and
// follows CPU hotplug.
func ProbeHost() Host {
	h := Host{NCPU: runtime.NumCPU()}
	unified := exists(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if unified {
		h.Cpus = firstFile(filepath.Join(cgroupRoot, "cpuset.cpus.effective"), "/sys/devices/system/cpu/online")
		h.Mems = firstFile(filepath.Join(cgroupRoot, "cpuset.mems.effective"), "/sys/devices/system/node/online")
	} else {
		v1 := filepath.Join(cgroupRoot, "cpuset")
		h.Cpus = firstFile(filepath.Join(v1, "cpuset.effective_cpus"), filepath.Join(v1, "cpuset.cpus"), "/sys/devices/system/cpu/online")
		h.Mems = firstFile(filepath.Join(v1, "cpuset.effective_mems"), filepath.Join(v1, "cpuset.mems"), "/sys/devices/system/node/online")
	}
	if h.Mems == "" && !exists("/sys/devices/system/node") {
		h.Mems = "0" // a kernel without NUMA has the one node 0
	}
	h.BlkioWeight = blkioWeightSupported(unified)
	h.Controllers = controllers(unified)
	return h
}

// controllers lists the controllers ValidateResources asks for that the
// host offers: on cgroup v2 the root's cgroup.controllers (on a hybrid
// machine a container with the unified layout sees a cgroup2 root with
// none: they are all bound to v1), on v1 the hierarchies mounted. nil
// when the v2 list cannot be read.
func controllers(unified bool) map[string]bool {
	have := map[string]bool{}
	if unified {
		b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
		if err != nil {
			return nil
		}
		for _, c := range strings.Fields(string(b)) {
			have[c] = true
		}
		return have
	}
	for _, c := range []string{"memory", "cpu", "cpuset", "pids"} {
		have[c] = exists(filepath.Join(cgroupRoot, c))
	}
	return have
}

// blkioWeightSupported tells whether a block I/O weight can be applied:
// on cgroup v1 the blkio controller needs CFQ's blkio.weight or BFQ's
// blkio.bfq.weight; on v2 the io controller needs io.weight (io.cost) or
// io.bfq.weight, files that only non-root cgroups have.
func blkioWeightSupported(unified bool) bool {
	if !unified {
		v1 := filepath.Join(cgroupRoot, "blkio")
		return exists(filepath.Join(v1, "blkio.weight")) || exists(filepath.Join(v1, "blkio.bfq.weight"))
	}
	ctrl, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err != nil || !strings.Contains(" "+strings.TrimSpace(string(ctrl))+" ", " io ") {
		return false
	}
	for _, name := range []string{"io.weight", "io.bfq.weight"} {
		if m, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", name)); len(m) > 0 {
			return true
		}
	}
	return false
}

// firstFile is the trimmed content of the first of paths that reads as
// something.
func firstFile(paths ...string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				return s
			}
		}
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
