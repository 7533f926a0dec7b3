package oci

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/userns"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// CgroupsAnnotation in a spec tells the exec driver how much of the
// container's own cgroup (the payload, below the limits cgroup) is
// writable on a cgroup v1 host; Build alone sets it (a value from the
// user's annotations is dropped). Without it, only the hierarchies the
// cgroup mount's "rw" delegates (name=systemd and cgroup2, for the systemd
// profile) are writable; with CgroupsWritable, every hierarchy's payload
// cgroup is (--security-opt writable-cgroups).
const CgroupsAnnotation = "io.sdengine.cgroups"

// CgroupsWritable is CgroupsAnnotation's value for a container whose
// payload cgroup is writable in every hierarchy.
const CgroupsWritable = "writable"

// Docker's default network sysctls for a container with a network
// namespace of its own: what they allow (ICMP echo sockets and ports
// below 1024 without CAP_NET_RAW or CAP_NET_BIND_SERVICE) is no more than
// the default capabilities grant already, and they only hold in the
// container's namespace.
var defaultNetSysctls = []struct{ key, value string }{
	{"net.ipv4.ping_group_range", "0 2147483647"},
	{"net.ipv4.ip_unprivileged_port_start", "0"},
}

// finishSpec sets what Build does the same way for privileged and
// unprivileged containers once namespaces, mounts and devices are in place:
// the domain name, sysctls, masked and read-only paths, the seccomp
// profile and the cgroup mount's writability.
func finishSpec(s *specs.Spec, o SpecOptions, sec securityOpts) error {
	s.Domainname = o.Domainname
	s.Linux.Sysctl = sysctls(s, o.NetNSOwned, o.Sysctls)
	// nil means the defaults: none for --privileged. A list given (even
	// empty) replaces them, as in Docker, for privileged containers too.
	switch {
	case o.MaskedPaths != nil:
		s.Linux.MaskedPaths = slices.Clone(o.MaskedPaths)
	case !o.Privileged:
		s.Linux.MaskedPaths = DefaultMaskedPaths()
	}
	switch {
	case o.ReadonlyPaths != nil:
		s.Linux.ReadonlyPaths = slices.Clone(o.ReadonlyPaths)
	case !o.Privileged:
		s.Linux.ReadonlyPaths = slices.Clone(DefaultReadonlyPaths)
	}
	if err := setSeccomp(s, sec, o.Privileged); err != nil {
		return err
	}
	writable := o.Privileged
	if sec.writableCgroups != nil {
		writable = *sec.writableCgroups
	}
	setCgroupWritable(s, writable)
	setCgroupLayout(s, o.CgroupLayout)
	return nil
}

// sysctls is the spec's sysctl map: Docker's network defaults when the
// container gets a new network namespace (not the host's, not one it
// joins), then the user's, which win. libcontainer refuses, at start, any
// sysctl that is not namespaced or whose namespace the container shares
// with the host, so none of them reaches the host's settings.
func sysctls(s *specs.Spec, owned bool, user map[string]string) map[string]string {
	out := map[string]string{}
	if owned || ownNetNS(s) {
		for _, d := range defaultNetSysctls {
			// ping_group_range cannot be set in a user namespace (the
			// group range is the initial namespace's); a kernel without
			// the sysctl would make libcontainer fail the start.
			if d.key == "net.ipv4.ping_group_range" && userns.RunningInUserNS() {
				continue
			}
			if sysctlExists(d.key) {
				out[d.key] = d.value
			}
		}
	}
	maps.Copy(out, user)
	if len(out) == 0 {
		return nil
	}
	return out
}

// ownNetNS reports whether the spec gives the container a new network
// namespace.
func ownNetNS(s *specs.Spec) bool {
	return slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
		return n.Type == specs.NetworkNamespace && n.Path == ""
	})
}

// sysctlExists reports whether the running kernel has the sysctl key.
func sysctlExists(key string) bool {
	_, err := os.Stat(filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/")))
	return err == nil
}

// setCgroupWritable makes the engine's cgroup mount read-only or writable,
// and tells the exec driver (CgroupsAnnotation) that a writable one means
// the container's whole payload cgroup, controllers included, on a v1
// host. Only the payload is ever writable: the limits are one level up,
// out of the container's sight, and the kernel holds a child cgroup to
// its parent's limits (memory, pids, cpu quota, cpuset, device rules),
// so whatever the container writes or creates below it stays within them.
// A user's own mount at /sys/fs/cgroup (a bind) is left as it is.
func setCgroupWritable(s *specs.Spec, writable bool) {
	if s.Annotations != nil {
		delete(s.Annotations, CgroupsAnnotation)
	}
	for i, m := range s.Mounts {
		if m.Type != "cgroup" || path.Clean(m.Destination) != "/sys/fs/cgroup" {
			continue
		}
		opts := slices.DeleteFunc(slices.Clone(m.Options), func(o string) bool { return o == "ro" || o == "rw" })
		if writable {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[CgroupsAnnotation] = CgroupsWritable
		} else {
			opts = append(opts, "ro")
		}
		s.Mounts[i].Options = opts
	}
}
