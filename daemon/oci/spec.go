// Package oci turns a container's configuration into an OCI runtime spec
// with Docker's defaults: namespaces, capabilities, masked paths, the
// default seccomp profile, the /dev and /sys mounts and cgroup limits.
package oci

import (
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/go-units"
	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/pkg/errdefs"
)

// SpecOptions is everything Build needs to know about one container.
type SpecOptions struct {
	ID, Hostname, Rootfs string
	ReadonlyRootfs       bool

	Args, Env      []string
	Cwd            string
	UID, GID       uint32
	AdditionalGids []uint32
	Tty            bool

	Privileged                   bool
	CapAdd, CapDrop, SecurityOpt []string
	NetworkMode                  string
	// NetNS is the network namespace the container joins, by path: the one
	// the daemon made for a bridge container (NetNSOwned: the container's
	// own, which gets Docker's network sysctls), or another container's.
	NetNS                        string
	NetNSOwned                   bool
	Memory, MemorySwap, NanoCPUs int64
	MemoryReservation            int64 // the soft limit (--memory-reservation)
	OomKillDisable               bool  // --oom-kill-disable (cgroup v1 only, as in Docker)
	OomScoreAdj                  int   // the process's oom_score_adj (--oom-score-adj)
	CPUShares                    int64
	CpusetCpus, CpusetMems       string // "0-3,6": CPUs and memory nodes the container may use
	BlkioWeight                  uint16 // 10..1000; 0 leaves the kernel's default
	PidsLimit                    *int64
	Ulimits                      []*units.Ulimit
	ShmSize                      int64
	CgroupParent                 string
	Devices                      []Device // --device
	DeviceCgroupRules            []string // --device-cgroup-rule: "c 1:3 rwm"
	Mounts                       []specs.Mount
	Annotations                  map[string]string

	// The runtime configuration (runtime.go). Domainname is the UTS
	// domain name; Sysctls the user's (--sysctl), over Docker's network
	// defaults. MaskedPaths and ReadonlyPaths replace the defaults when
	// not nil (the daemon records the defaults at create, as Docker does).
	Domainname                 string
	Sysctls                    map[string]string
	MaskedPaths, ReadonlyPaths []string

	// SystemdCgroup selects the systemd cgroup driver: the container gets
	// its own scope, docker-<id>.scope in CgroupParent (a slice, default
	// machine.slice), which systemd-machined ties the machine to.
	SystemdCgroup bool
	// CgroupLayout is the container's CgroupLayoutAnnotation: "" or
	// CgroupLayoutUnified.
	CgroupLayout string

	// IPC, PID and UTS say whose namespaces the container has: its own
	// (the zero value), the host's or another container's, resolved by
	// the daemon from --ipc, --pid and --uts.
	IPC, PID, UTS NamespaceShare
	// NoShm leaves /dev/shm out (--ipc none); ShmSource, when set, is the
	// host directory bound at /dev/shm instead of a tmpfs of the
	// container's own (--ipc shareable, container:X, host).
	NoShm     bool
	ShmSource string
}

// ConsoleAnnotation in a spec asks the exec driver for a pty at
// /dev/console, apart from the process's stdio, whose output goes to the
// container's log (ConsolePTY).
const ConsoleAnnotation = "io.sdengine.console"

// ConsolePTY is ConsoleAnnotation's value for a pty console.
const ConsolePTY = "pty"

// DefaultCgroupParent is where containers' cgroups go (cgroupfs driver).
const DefaultCgroupParent = "/docker"

// DefaultSystemdSlice is the slice of containers' scopes (systemd driver):
// where systemd-nspawn puts machines too.
const DefaultSystemdSlice = "machine.slice"

// cgroupNamespaceOnV1 decides whether containers get a private cgroup
// namespace on cgroup v1 hosts too (Docker only does it on v2; libcontainer
// handles both, and a private view leaks less of the host).
var cgroupNamespaceOnV1 = true

// Build returns the OCI spec for o. Errors caused by bad options are
// classified as invalid parameters.
func Build(o SpecOptions) (*specs.Spec, error) {
	if o.Rootfs == "" {
		return nil, errdefs.InvalidParameter(fmt.Errorf("no rootfs for container %s", o.ID))
	}
	if len(o.Args) == 0 {
		return nil, errdefs.InvalidParameter(fmt.Errorf("no command specified"))
	}
	cgPath, err := cgroupsPath(o.CgroupParent, o.ID, o.SystemdCgroup)
	if err != nil {
		return nil, err
	}
	sec, err := parseSecurityOpts(o.SecurityOpt)
	if err != nil {
		return nil, err
	}
	caps := allCapabilities
	if !o.Privileged {
		if caps, err = tweakCapabilities(DefaultCapabilities, o.CapAdd, o.CapDrop); err != nil {
			return nil, err
		}
	}
	cwd := WorkingDir(o.Cwd)
	if !path.IsAbs(cwd) {
		return nil, errdefs.InvalidParameter(fmt.Errorf("the working directory '%s' is invalid, it needs to be an absolute path", o.Cwd))
	}
	oomScoreAdj := o.OomScoreAdj
	s := &specs.Spec{
		Version:  specs.Version,
		Hostname: o.Hostname,
		Root:     &specs.Root{Path: o.Rootfs, Readonly: o.ReadonlyRootfs},
		Process: &specs.Process{
			Terminal: o.Tty,
			Args:     append([]string(nil), o.Args...),
			Env:      DefaultEnv(o.Env, o.Hostname, o.Tty),
			Cwd:      cwd,
			User: specs.User{
				UID:            o.UID,
				GID:            o.GID,
				AdditionalGids: append([]uint32(nil), o.AdditionalGids...),
			},
			Capabilities: &specs.LinuxCapabilities{
				Bounding:  append([]string(nil), caps...),
				Effective: append([]string(nil), caps...),
				Permitted: append([]string(nil), caps...),
			},
			NoNewPrivileges: sec.noNewPrivileges,
			OOMScoreAdj:     &oomScoreAdj,
		},
		Annotations: copyMap(o.Annotations),
		Linux: &specs.Linux{
			RootfsPropagation: "rprivate",
			CgroupsPath:       cgPath,
			Resources:         &specs.LinuxResources{},
		},
	}
	if s.Process.ConsoleSize == nil && o.Tty {
		s.Process.ConsoleSize = &specs.Box{}
	}
	if err := setNamespaces(s, o); err != nil {
		return nil, err
	}
	s.Process.Rlimits, err = rlimits(o.Ulimits)
	if err != nil {
		return nil, err
	}
	setResources(s.Linux.Resources, o)
	shm := o.ShmSize
	if shm <= 0 {
		shm = DefaultShmSize
	}
	s.Mounts = mergeMounts(applyShm(defaultMounts(shm, o.Privileged), o), o.Mounts)
	if o.Privileged {
		devs, err := hostDevices()
		if err != nil {
			return nil, fmt.Errorf("listing host devices: %w", err)
		}
		// Every host device is there already, and allowed: as in Docker,
		// a mapping only adds a node where the container would not have
		// one, and its permissions are all.
		var moved []Device
		for _, d := range o.Devices {
			if d.PathInContainer != "" && d.PathInContainer != d.PathOnHost {
				moved = append(moved, Device{PathOnHost: d.PathOnHost, PathInContainer: d.PathInContainer, CgroupPermissions: "rwm"})
			}
		}
		mapped, _, err := userDevices(moved)
		if err != nil {
			return nil, err
		}
		s.Linux.Devices = mergeDevices(devs, mapped)
		s.Linux.Resources.Devices = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
		if err := finishSpec(s, o, sec); err != nil {
			return nil, err
		}
		return s, nil
	}
	devs, rules, err := userDevices(o.Devices)
	if err != nil {
		return nil, err
	}
	for _, r := range o.DeviceCgroupRules {
		rule, err := ParseDeviceCgroupRule(r)
		if err != nil {
			return nil, err
		}
		rules = append(rules, rule)
	}
	// Deny everything first, then allow the user's devices; the runtime
	// appends the default devices (null, zero, full, random, urandom, tty,
	// console, ptmx, pts) after them, save those a user's device replaces
	// at the same path (so --device /dev/zero:/dev/zero:r holds).
	s.Linux.Devices = devs
	s.Linux.Resources.Devices = append([]specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}, rules...)
	if err := finishSpec(s, o, sec); err != nil {
		return nil, err
	}
	return s, nil
}

// cgroupsPath is the spec's cgroupsPath. It names the payload cgroup,
// where the container's processes run and its cgroup namespace is rooted;
// the exec driver puts the limits (the spec's resources) on its parent,
// which the container cannot see (daemon/execdriver/shim/cgroups.go):
//
//	cgroupfs: <parent>/<id>/payload, limits on <parent>/<id>
//	systemd:  "<slice>:docker:<id>", which libcontainer turns into the
//	          scope docker-<id>.scope in <slice>, the slice
//	          <parent prefix>-docker-<id>.slice that holds the limits.
//
// As with Docker, a systemd parent must be a slice name.
func cgroupsPath(parent, id string, systemd bool) (string, error) {
	if err := ValidateCgroupParent(parent, systemd); err != nil {
		return "", err
	}
	if systemd {
		if parent == "" {
			parent = DefaultSystemdSlice
		}
		limits := "docker-" + id + ".slice"
		if parent != "-.slice" {
			limits = strings.TrimSuffix(parent, ".slice") + "-" + limits
		}
		return limits + ":docker:" + id, nil
	}
	if parent == "" {
		parent = DefaultCgroupParent
	}
	if !strings.HasPrefix(parent, "/") {
		parent = "/" + parent
	}
	return path.Join(parent, id, PayloadCgroup), nil
}

// ValidateCgroupParent refuses a --cgroup-parent the driver cannot use:
// with systemd a slice name, as in Docker; with cgroupfs a path that
// stays below the hierarchy's root, so no ".." (cleaned away, it would
// put the container's cgroup somewhere other than it says, where nothing
// removes it). The daemon calls it at create, Build at start.
func ValidateCgroupParent(parent string, systemd bool) error {
	if parent == "" {
		return nil
	}
	if strings.ContainsAny(parent, "\x00\n") {
		return errdefs.InvalidParameter(fmt.Errorf("invalid --cgroup-parent %q: a cgroup name cannot hold NUL or a newline", parent))
	}
	if systemd {
		if !strings.HasSuffix(parent, ".slice") || strings.ContainsAny(parent, "/:") {
			return errdefs.InvalidParameter(fmt.Errorf("cgroup-parent for systemd cgroup should be a valid slice named as \"xxx.slice\", not %q", parent))
		}
		return nil
	}
	for _, elem := range strings.Split(parent, "/") {
		if elem == ".." {
			return errdefs.InvalidParameter(fmt.Errorf("invalid --cgroup-parent %q: \"..\" is not allowed: the cgroup parent is a path below the cgroup root", parent))
		}
	}
	return nil
}

// PayloadCgroup is the name of the cgroup, below the one holding the
// limits, where a container's processes run (cgroupfs driver).
const PayloadCgroup = "payload"

// setNamespaces lists the namespaces the container gets: its own of each
// kind, save those it shares. A namespace shared with the host is left out
// of the spec; one shared with another container is joined by its path.
func setNamespaces(s *specs.Spec, o SpecOptions) error {
	var ns []specs.LinuxNamespace
	add := func(t specs.LinuxNamespaceType, share NamespaceShare) {
		if !share.Host {
			ns = append(ns, specs.LinuxNamespace{Type: t, Path: share.Path})
		}
	}
	add(specs.PIDNamespace, o.PID)
	add(specs.IPCNamespace, o.IPC)
	add(specs.UTSNamespace, o.UTS)
	if o.UTS.Host {
		// The host's name is the container's: it sets none (the runtime
		// refuses a hostname without a UTS namespace of its own).
		s.Hostname = ""
	}
	ns = append(ns, specs.LinuxNamespace{Type: specs.MountNamespace})
	switch mode := o.NetworkMode; {
	case mode == "host":
	case o.NetNS != "":
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: o.NetNS})
	case mode == "" || mode == "none" || mode == "default" || mode == "bridge":
		// Without a bridge (--bridge none), a namespace with only lo.
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	case strings.HasPrefix(mode, "container:"):
		return errdefs.InvalidParameter(fmt.Errorf("network mode %q: no network namespace to join", mode))
	default:
		return errdefs.InvalidParameter(fmt.Errorf("network mode %q is not supported", mode))
	}
	if cgroupNamespaceOnV1 || cgroups.IsCgroup2UnifiedMode() {
		ns = append(ns, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	s.Linux.Namespaces = ns
	return nil
}

func setResources(r *specs.LinuxResources, o SpecOptions) {
	if o.Memory > 0 {
		mem := o.Memory
		r.Memory = &specs.LinuxMemory{Limit: &mem}
		// Docker's rule: no --memory-swap means swap as large as memory
		// (memory+swap = 2*memory); -1 is unlimited.
		swap := o.MemorySwap
		if swap == 0 {
			swap = 2 * mem
		}
		if swapLimitSupported() {
			r.Memory.Swap = &swap
		} else if o.MemorySwap != 0 {
			slog.Warn("swap limit not supported by the kernel; ignoring --memory-swap", "container", o.ID)
		}
	}
	if o.MemoryReservation > 0 {
		if r.Memory == nil {
			r.Memory = &specs.LinuxMemory{}
		}
		res := o.MemoryReservation
		r.Memory.Reservation = &res
	}
	// cgroup v2 has no way to disable the OOM killer: Docker drops the
	// setting there with a warning, and so does this.
	if o.OomKillDisable {
		if cgroups.IsCgroup2UnifiedMode() {
			slog.Warn("--oom-kill-disable is not supported on cgroup v2; ignored", "container", o.ID)
		} else {
			if r.Memory == nil {
				r.Memory = &specs.LinuxMemory{}
			}
			disable := true
			r.Memory.DisableOOMKiller = &disable
		}
	}
	if o.NanoCPUs > 0 || o.CPUShares > 0 || o.CpusetCpus != "" || o.CpusetMems != "" {
		r.CPU = &specs.LinuxCPU{Cpus: o.CpusetCpus, Mems: o.CpusetMems}
		if o.CPUShares > 0 {
			sh := uint64(o.CPUShares)
			r.CPU.Shares = &sh
		}
		if o.NanoCPUs > 0 {
			period := uint64(100000)
			quota := o.NanoCPUs * int64(period) / 1e9
			if quota < 1000 {
				quota = 1000 // kernel minimum is 1ms
			}
			r.CPU.Period = &period
			r.CPU.Quota = &quota
		}
	}
	if o.PidsLimit != nil && *o.PidsLimit > 0 {
		r.Pids = &specs.LinuxPids{Limit: o.PidsLimit}
	}
	if o.BlkioWeight > 0 {
		w := o.BlkioWeight
		r.BlockIO = &specs.LinuxBlockIO{Weight: &w}
	}
}

func rlimits(ul []*units.Ulimit) ([]specs.POSIXRlimit, error) {
	var out []specs.POSIXRlimit
	for _, u := range ul {
		if u == nil {
			continue
		}
		// -1 is unlimited (RLIM_INFINITY, which uint64(-1) is).
		if u.Soft < -1 || u.Hard < -1 || (u.Hard != -1 && (u.Soft == -1 || u.Soft > u.Hard)) {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid ulimit %s: soft limit %d must not exceed hard limit %d", u.Name, u.Soft, u.Hard))
		}
		out = append(out, specs.POSIXRlimit{
			Type: "RLIMIT_" + strings.ToUpper(u.Name),
			Hard: uint64(u.Hard),
			Soft: uint64(u.Soft),
		})
	}
	return out, nil
}

// DefaultWorkingDir is the working directory of a process that names none,
// and whose container names none either (Docker's).
const DefaultWorkingDir = "/"

// WorkingDir is a process's working directory: the first of dirs that is
// set (an exec's own, then its container's), else DefaultWorkingDir. The
// one place that default is applied, for Build and for the daemon's execs.
func WorkingDir(dirs ...string) string {
	for _, d := range dirs {
		if d != "" {
			return d
		}
	}
	return DefaultWorkingDir
}

// DefaultEnv adds what Docker always puts in a container's environment
// when the image and the user did not: PATH, HOSTNAME and, with a tty, TERM.
// It is idempotent; the daemon also uses it for exec'd processes.
func DefaultEnv(env []string, hostname string, tty bool) []string {
	out := make([]string, 0, len(env)+3)
	has := func(k string) bool {
		for _, e := range env {
			if strings.HasPrefix(e, k+"=") {
				return true
			}
		}
		return false
	}
	if !has("PATH") {
		out = append(out, "PATH="+DefaultPath)
	}
	if hostname != "" && !has("HOSTNAME") {
		out = append(out, "HOSTNAME="+hostname)
	}
	out = append(out, env...)
	if tty && !has("TERM") {
		out = append(out, "TERM=xterm")
	}
	return out
}

// mergeMounts puts the daemon's mounts over the defaults: a daemon mount
// replaces a default at the same destination, and also any default below
// a daemon mount's destination is dropped (a bind over /dev hides /dev/shm).
func mergeMounts(defaults, user []specs.Mount) []specs.Mount {
	out := make([]specs.Mount, 0, len(defaults)+len(user))
	for _, d := range defaults {
		hidden := false
		for _, u := range user {
			ud := path.Clean(u.Destination)
			if ud == d.Destination || strings.HasPrefix(d.Destination, ud+"/") {
				hidden = true
				break
			}
		}
		if !hidden {
			out = append(out, d)
		}
	}
	// Parents before children, so that a bind under another bind lands
	// on top of it whatever order the daemon listed them in.
	sorted := append([]specs.Mount(nil), user...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return depth(sorted[i].Destination) < depth(sorted[j].Destination)
	})
	return append(out, sorted...)
}

func depth(p string) int { return strings.Count(path.Clean(p), "/") }

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
