package runconfig

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	units "github.com/docker/go-units"

	"github.com/sdengine/engine/pkg/errdefs"
)

// MinMemory is the smallest memory limit Docker accepts (6 MiB).
const MinMemory = 6 * 1024 * 1024

// Host is what resource validation needs to know of the machine.
type Host struct {
	NCPU        int    // CPUs the daemon may use (the ceiling of --cpus)
	Cpus, Mems  string // CPUs and memory nodes a cpuset may name ("0-3,6")
	BlkioWeight bool   // the kernel can weigh block I/O (blkio.weight / io.weight)
	// Controllers are the cgroup controllers the host offers its
	// containers (memory, cpu, cpuset, pids): on cgroup v2 those in the
	// root's cgroup.controllers, on v1 those mounted. nil when not known:
	// nothing is refused for want of one.
	Controllers map[string]bool
}

// ValidateResources refuses resource limits that are malformed or that the
// host cannot honour, so that a create request fails with a 400 naming the
// flag instead of leaving a container that cannot start. Zero values mean
// "not set", as on the wire.
func ValidateResources(r *containertypes.Resources, h Host) error {
	bad := func(format string, args ...any) error {
		return errdefs.InvalidParameter(fmt.Errorf(format, args...))
	}
	if r.Memory < 0 {
		return bad("invalid --memory %d: the memory limit cannot be negative", r.Memory)
	}
	if r.Memory > 0 && r.Memory < MinMemory {
		return bad("invalid --memory %s: Minimum memory limit allowed is 6MB", units.BytesSize(float64(r.Memory)))
	}
	switch {
	case r.MemorySwap < -1:
		return bad("invalid --memory-swap %d: use a size, or -1 for unlimited swap", r.MemorySwap)
	case r.MemorySwap > 0 && r.Memory == 0:
		return bad("invalid --memory-swap %s: set --memory too when limiting memory+swap", units.BytesSize(float64(r.MemorySwap)))
	case r.MemorySwap > 0 && r.MemorySwap < r.Memory:
		return bad("invalid --memory-swap %s: the memory+swap limit must not be smaller than --memory %s",
			units.BytesSize(float64(r.MemorySwap)), units.BytesSize(float64(r.Memory)))
	}
	// Docker's messages, word for word.
	if r.MemoryReservation < 0 {
		return bad("invalid --memory-reservation %d: the memory reservation cannot be negative", r.MemoryReservation)
	}
	if r.MemoryReservation > 0 && r.MemoryReservation < MinMemory {
		return bad("Minimum memory reservation allowed is 6MB")
	}
	if r.Memory > 0 && r.MemoryReservation > 0 && r.Memory < r.MemoryReservation {
		return bad("Minimum memory limit can not be less than memory reservation limit, see usage")
	}
	// No device driver (GPUs: --gpus) is known to this engine; Docker
	// refuses a request none of its drivers takes with this message.
	if len(r.DeviceRequests) > 0 {
		dr := r.DeviceRequests[0]
		return bad("could not select device driver %q with capabilities: %v", dr.Driver, dr.Capabilities)
	}
	if r.NanoCPUs < 0 {
		return bad("invalid --cpus %s: the number of CPUs must be more than 0", formatCPUs(r.NanoCPUs))
	}
	if h.NCPU > 0 && r.NanoCPUs > int64(h.NCPU)*1e9 {
		return bad("invalid --cpus %s: the host has only %d CPUs, so --cpus must be more than 0 and at most %d",
			formatCPUs(r.NanoCPUs), h.NCPU, h.NCPU)
	}
	if r.CPUShares < 0 {
		// Docker's message, word for word: clients match on it.
		return bad("invalid CPU shares (%d): value must be a positive integer", r.CPUShares)
	}
	if r.PidsLimit != nil && *r.PidsLimit < -1 {
		return bad("invalid --pids-limit %d: use a positive limit, or 0 or -1 for unlimited", *r.PidsLimit)
	}
	if err := validateCpuset("--cpuset-cpus", "CPU", r.CpusetCpus, h.Cpus); err != nil {
		return err
	}
	if err := validateCpuset("--cpuset-mems", "memory node", r.CpusetMems, h.Mems); err != nil {
		return err
	}
	if r.BlkioWeight != 0 {
		if r.BlkioWeight < 10 || r.BlkioWeight > 1000 {
			return bad("invalid --blkio-weight %d: the weight must be between 10 and 1000", r.BlkioWeight)
		}
		if !h.BlkioWeight {
			return bad("cannot use --blkio-weight %d: your kernel does not support blkio weight", r.BlkioWeight)
		}
	}
	if err := validateControllers(r, h.Controllers); err != nil {
		return err
	}
	if err := validateUlimits(r.Ulimits); err != nil {
		return err
	}
	return validateDevices(r.Devices)
}

// validateControllers refuses a limit whose controller the host does not
// offer, a cgroup v2 hierarchy with no controller enabled for instance
// (one where every controller is bound to v1): the kernel would have no
// file to write it to, and the start would fail. Docker drops such a limit
// with a warning; a limit silently not enforced is worse than a 400.
func validateControllers(r *containertypes.Resources, have map[string]bool) error {
	if have == nil {
		return nil
	}
	for _, c := range []struct {
		controller, flag string
		set              bool
	}{
		{"memory", "--memory", r.Memory > 0},
		{"memory", "--memory-reservation", r.MemoryReservation > 0},
		{"cpu", "--cpus", r.NanoCPUs > 0},
		{"cpu", "--cpu-shares", r.CPUShares > 0},
		{"cpuset", "--cpuset-cpus", r.CpusetCpus != ""},
		{"cpuset", "--cpuset-mems", r.CpusetMems != ""},
		{"pids", "--pids-limit", r.PidsLimit != nil && *r.PidsLimit > 0},
	} {
		if c.set && !have[c.controller] {
			return errdefs.InvalidParameter(fmt.Errorf("cannot use %s: the host's cgroups have no %s controller for containers", c.flag, c.controller))
		}
	}
	return nil
}

// formatCPUs shows NanoCPUs as the --cpus value that gave them.
func formatCPUs(nano int64) string {
	return strconv.FormatFloat(float64(nano)/1e9, 'f', -1, 64)
}

// validateCpuset checks a --cpuset-cpus/--cpuset-mems list against what
// the host has (avail, in the same syntax; empty means "not known").
func validateCpuset(flag, what, list, avail string) error {
	if list == "" {
		return nil
	}
	req, err := ParseCpuset(list)
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid %s %q: %w", flag, list, err))
	}
	if avail == "" {
		return nil
	}
	have, err := ParseCpuset(avail)
	if err != nil {
		// The host's own list is unreadable: let the kernel judge.
		return nil
	}
	if n, ok := have.Covers(req); !ok {
		return errdefs.InvalidParameter(fmt.Errorf("invalid %s %q: %s %d is not available (the host has %s)", flag, list, what, n, avail))
	}
	return nil
}

// Cpuset is a list of CPU or memory node numbers as sorted, disjoint,
// inclusive ranges.
type Cpuset [][2]int

// maxCpusetID bounds the numbers in a list: Linux has at most 8192 CPUs,
// and a bound keeps "0-999999999999" from overflowing.
const maxCpusetID = 1 << 20

// ParseCpuset parses the kernel's list format: "0-3,6,8-9".
func ParseCpuset(s string) (Cpuset, error) {
	var out Cpuset
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpusetID(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = cpusetID(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("range %q goes backwards", part)
			}
		}
		out = append(out, [2]int{a, b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	merged := out[:1]
	for _, r := range out[1:] {
		last := &merged[len(merged)-1]
		if r[0] <= last[1]+1 {
			last[1] = max(last[1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}

func cpusetID(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number: use a list like 0-3,6", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxCpusetID {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n, nil
}

// Covers reports whether every number of req is in c; if not, it returns
// the first one missing.
func (c Cpuset) Covers(req Cpuset) (int, bool) {
	for _, r := range req {
		n := r[0]
		for n <= r[1] {
			i := sort.Search(len(c), func(i int) bool { return c[i][1] >= n })
			if i == len(c) || c[i][0] > n {
				return n, false
			}
			n = c[i][1] + 1
		}
	}
	return 0, true
}
