package shim

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/daemon/oci"
)

var (
	boundingOnce sync.Once
	boundingSet  uint64
	boundingOK   bool
)

// ownBoundingSet reads the capability bounding set we run with.
func ownBoundingSet() (uint64, bool) {
	boundingOnce.Do(func() {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
				boundingSet, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				boundingOK = err == nil
			}
		}
	})
	return boundingSet, boundingOK
}

// filterCaps drops capabilities we do not hold ourselves: no process can
// grant them, and asking for them (e.g. "all caps" for --privileged where
// the daemon lacks CAP_SYS_RESOURCE) would make the start fail with EPERM.
func filterCaps(list []string) []string {
	bnd, ok := ownBoundingSet()
	if !ok {
		return list
	}
	all := oci.AllCapabilities() // in kernel number order
	out := list[:0:0]
	for _, c := range list {
		n := -1
		for i, k := range all {
			if k == c {
				n = i
				break
			}
		}
		if n >= 0 && bnd&(1<<uint(n)) == 0 {
			slog.Debug("dropping capability the runtime does not hold", "cap", c)
			continue
		}
		out = append(out, c)
	}
	return out
}

func filterSpecCaps(c *specs.LinuxCapabilities) {
	if c == nil {
		return
	}
	c.Bounding = filterCaps(c.Bounding)
	c.Effective = filterCaps(c.Effective)
	c.Permitted = filterCaps(c.Permitted)
	c.Inheritable = filterCaps(c.Inheritable)
	c.Ambient = filterCaps(c.Ambient)
}
