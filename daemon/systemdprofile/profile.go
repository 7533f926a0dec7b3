// Package systemdprofile is the systemd profile (docs/systemd.md): what a
// container booting systemd as PID 1 needs from the engine, without
// privileges. It works in two steps that the daemon's start path calls one
// after the other:
//
//   - Prepare does what lives outside the spec: /etc/machine-id in the
//     container's root filesystem and the host's journal directory for it;
//   - Apply changes the built OCI spec in one place: the /run, /run/lock
//     and /tmp tmpfs, a delegated cgroup subtree, /etc/machine-id on a
//     read-only root, the journal bind, /run/host, container=docker and
//     the other variables of systemd's Container Interface (host.go), no
//     audit capabilities, the seccomp allowances and the console.
//
// A mount the user made at one of the profile's paths (or above it) wins:
// the profile leaves that path alone and nothing else.
package systemdprofile

import (
	"path"
	"slices"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/daemon/oci"
)

// StopSignal halts systemd cleanly. SIGTERM only makes it re-execute itself
// and SIGRTMIN+1 (the 2015 patch's 35) asks for rescue mode, so either
// would end in SIGKILL.
const StopSignal = "SIGRTMIN+3"

// initCommands boot an init: a container running one gets the profile
// without asking (unless the daemon is told not to).
var initCommands = []string{
	"/sbin/init", "/usr/sbin/init", "/usr/lib/systemd/systemd", "/lib/systemd/systemd", "systemd",
}

// IsInitCommand reports whether cmd boots an init.
func IsInitCommand(cmd string) bool { return slices.Contains(initCommands, cmd) }

// Options are the facts Apply needs besides the spec.
type Options struct {
	// Prepared is what Prepare did.
	Prepared Prepared
	// DefaultSeccomp says the spec carries the daemon's default seccomp
	// profile, the only one the profile's allowances are added to: a
	// user's own profile is used as written.
	DefaultSeccomp bool
	// CapAdd is the user's --cap-add: an audit capability named there is
	// kept, the others are dropped (see auditCaps).
	CapAdd []string
}

// Apply changes the built spec into a systemd container's, in one step.
func Apply(s *specs.Spec, o Options) {
	var add []specs.Mount
	tmpfs := func(dst, mode string, seed bool) specs.Mount {
		opts := []string{"nosuid", "nodev", "mode=" + mode, "size=65536k"}
		if seed {
			// libcontainer copies the image's content up into the tmpfs.
			opts = append(opts, "tmpcopyup")
		}
		return specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: opts}
	}
	// systemd cannot mount /run or /run/lock itself without CAP_SYS_ADMIN,
	// and fails without either: a user's /run keeps the /run/lock tmpfs.
	if !covered(s.Mounts, "/run") {
		add = append(add, tmpfs("/run", "755", true))
	}
	if !hasMountAt(s.Mounts, "/run/lock") {
		add = append(add, tmpfs("/run/lock", "755", true))
	}
	if !covered(s.Mounts, "/tmp") {
		add = append(add, tmpfs("/tmp", "1777", false))
	}
	if f := o.Prepared.MachineIDFile; f != "" && !covered(s.Mounts, "/etc/machine-id") {
		add = append(add, specs.Mount{Destination: "/etc/machine-id", Type: "bind", Source: f, Options: []string{"rbind", "ro"}})
	}
	if dir := o.Prepared.JournalDir; dir != "" {
		dst := path.Join(DefaultJournalRoot, path.Base(dir))
		add = append(add, specs.Mount{Destination: dst, Type: "bind", Source: dir, Options: []string{"rbind", "rw"}})
	}
	if dir := o.Prepared.RunHostDir; dir != "" {
		add = append(add, RunHostMount(dir))
	}
	s.Mounts = append(s.Mounts, add...)
	// Parents before children, whoever added them: the /run tmpfs must not
	// hide a user's bind below /run.
	sort.SliceStable(s.Mounts, func(i, j int) bool {
		return depth(s.Mounts[i].Destination) < depth(s.Mounts[j].Destination)
	})
	delegateCgroup(s)
	s.Process.Env = addEnv(s.Process.Env, "container="+ContainerManager)
	s.Process.Env = addEnv(s.Process.Env, o.Prepared.HostEnv...)
	// No container_ttys: the interface names there the ptys besides the
	// one /dev/console is, and a container has no other (with -t its
	// terminal is /dev/console, see below). systemd starts its console
	// getty on /dev/console by itself.
	dropAuditCaps(s.Process.Capabilities, o.CapAdd)
	if o.DefaultSeccomp && s.Linux != nil && s.Linux.Seccomp != nil {
		AllowSyscalls(s.Linux.Seccomp)
	}
	killScopeWithSIGKILL(s)
	// systemd as PID 1 writes its boot and shutdown messages only to a
	// console that is a tty. With -t libcontainer binds the terminal
	// there: a second pty over it would become PID 1's controlling tty
	// before libcontainer's own (its setctty then fails with EPERM).
	if s.Process.Terminal {
		delete(s.Annotations, oci.ConsoleAnnotation)
		return
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[oci.ConsoleAnnotation] = oci.ConsolePTY
}

// ScopeKillSignalAnnotation sets the KillSignal= of the container's scope
// (the systemd cgroup driver; libcontainer reads org.systemd.property.*).
const ScopeKillSignalAnnotation = "org.systemd.property.KillSignal"

// killScopeWithSIGKILL makes a stop of the container's scope by systemd on
// the host (`machinectl terminate`, `systemctl stop docker-ID.scope`) a
// `docker kill`: SIGKILL to every process at once. With the default
// SIGTERM, systemd as PID 1 would take it as "re-execute", its services
// would die under it, and the container would linger until the scope's
// stop timeout (90 s) ends in SIGKILL anyway. A graceful stop is `docker
// stop` or `machinectl poweroff` (SIGRTMIN+3/+4 to PID 1 alone). A user's
// own annotation wins.
func killScopeWithSIGKILL(s *specs.Spec) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if _, ok := s.Annotations[ScopeKillSignalAnnotation]; !ok {
		s.Annotations[ScopeKillSignalAnnotation] = "9"
	}
}

// delegateCgroup marks the engine's cgroup mount writable: the container
// gets its own subtree to manage (its cgroup namespace is rooted at its
// payload cgroup, below the one holding its limits). The exec driver keeps
// the controllers read-only whatever this says (only --security-opt
// writable-cgroups opens them, oci.CgroupsAnnotation), so only the
// name=systemd and cgroup2 hierarchies become writable. A user's own mount at
// /sys/fs/cgroup (a bind, not the engine's "cgroup" mount) stays as it is.
func delegateCgroup(s *specs.Spec) {
	for i, m := range s.Mounts {
		if m.Type != "cgroup" || path.Clean(m.Destination) != "/sys/fs/cgroup" {
			continue
		}
		opts := slices.DeleteFunc(slices.Clone(m.Options), func(o string) bool { return o == "ro" || o == "rw" })
		s.Mounts[i].Options = append(opts, "rw")
	}
}

// covered reports whether a mount in ms is at dst or above it (a bind of
// /var covers /var/log/journal). The root is not a mount here.
func covered(ms []specs.Mount, dst string) bool {
	return slices.ContainsFunc(ms, func(m specs.Mount) bool {
		d := path.Clean(m.Destination)
		return d != "/" && (d == dst || strings.HasPrefix(dst, d+"/"))
	})
}

// below reports whether a mount in ms is below dir.
func below(ms []specs.Mount, dir string) bool {
	return slices.ContainsFunc(ms, func(m specs.Mount) bool { return strings.HasPrefix(path.Clean(m.Destination), dir+"/") })
}

func hasMountAt(ms []specs.Mount, dst string) bool {
	return slices.ContainsFunc(ms, func(m specs.Mount) bool { return path.Clean(m.Destination) == dst })
}

func depth(p string) int { return strings.Count(path.Clean(p), "/") }
