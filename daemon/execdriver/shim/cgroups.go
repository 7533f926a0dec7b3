package shim

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// A container's cgroups come in two levels, as systemd-nspawn and machined
// arrange theirs:
//
//   - the limits cgroup holds every limit the user gave (-m, --cpus,
//     --pids-limit, ...). The container cannot see it, let alone write it;
//   - the payload cgroup, one level below, holds the container's processes.
//     Its cgroup namespace is rooted there, so what the container sees as
//     / is the payload: systemd in a container owns that subtree and
//     nothing more, and whatever root writes there, the limits one level up
//     still hold (the kernel applies a parent's limits to its subtree).
//
// The spec's cgroupsPath names the payload (libcontainer creates it and puts
// the init there, before the cgroup namespace is made); the limits cgroup
// is its parent and is derived from it:
//
//	cgroupfs: /docker/<id>/payload            limits: /docker/<id>
//	systemd:  machine-docker-<id>.slice:docker:<id>
//	          payload: docker-<id>.scope (Delegate=yes)
//	          limits:  machine-docker-<id>.slice (a slice holds no process,
//	          so systemd can create it empty, before the container exists)
//
// Both derivations are in shimproto (LimitsCgroup, PayloadRelPath): the
// driver removes the limits cgroup itself (shimproto.DestroyLimits) when
// the shim died before it could.

// createLimits makes the limits cgroup and writes the limits into it.
func createLimits(cg *cgroups.Cgroup) (cgroups.Manager, error) {
	m, err := manager.New(cg)
	if err != nil {
		return nil, fmt.Errorf("limits cgroup: %w", err)
	}
	if err := m.Apply(-1); err != nil {
		_ = m.Destroy()
		return nil, fmt.Errorf("create limits cgroup: %w", err)
	}
	if err := m.Set(cg.Resources); err != nil {
		_ = m.Destroy()
		return nil, fmt.Errorf("set container limits: %w", err)
	}
	return m, nil
}

const cgroupRoot = "/sys/fs/cgroup"

// confineCgroupMount makes the container's view of /sys/fs/cgroup follow
// least privilege on cgroup v1 (and hybrid) hosts, where libcontainer would
// leave the tmpfs writable and mount every hierarchy with the same flags.
// The view becomes a read-only tmpfs holding each hierarchy's payload
// cgroup, read-only; only when the spec asked for a writable cgroup mount
// (a delegated subtree, for systemd) are the name=systemd hierarchy and
// the cgroup2 one of a hybrid host writable. Controllers are not, unless
// the spec says so (allControllers: oci.CgroupsAnnotation, from
// --security-opt writable-cgroups), and then only in the payload cgroup:
// the limits cgroup above it, which the container cannot see, is where
// the kernel holds the container to its limits whatever it writes below.
// The tmpfs itself, and every hierarchy's root (release_agent), stay out of
// reach. On a pure v2 host libcontainer's cgroup2 mount of the namespace's
// root is left as it is: the limits are one level up, out of sight.
//
// A privileged container (CAP_SYS_ADMIN) can mount any hierarchy itself, so
// its mount is left to libcontainer.
func confineCgroupMount(config *configs.Config, payloadRel string, privileged, allControllers bool) error {
	if privileged || cgroups.IsCgroup2UnifiedMode() {
		return nil
	}
	i := slices.IndexFunc(config.Mounts, func(m *configs.Mount) bool {
		return m.Device == "cgroup" && path.Clean(m.Destination) == cgroupRoot
	})
	if i < 0 {
		return nil
	}
	delegate := config.Mounts[i].Flags&unix.MS_RDONLY == 0
	view, err := cgroupView(payloadRel, delegate, delegate && allControllers)
	if err != nil {
		return err
	}
	config.Mounts = slices.Concat(config.Mounts[:i], view, config.Mounts[i+1:])
	return nil
}

// cgroupView lists the mounts of a confined /sys/fs/cgroup: delegate makes
// the name=systemd and cgroup2 hierarchies' payload writable, controllers
// every hierarchy's.
func cgroupView(payloadRel string, delegate, controllers bool) ([]*configs.Mount, error) {
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	view := []*configs.Mount{{
		Source: "tmpfs", Device: "tmpfs", Destination: cgroupRoot,
		// Read-only once every mount below is in place (libcontainer
		// remounts read-only tmpfs mounts last).
		Flags: flags | unix.MS_RDONLY, Data: "mode=755",
	}}
	bind := func(src, dst string, writable bool) {
		f := flags | unix.MS_BIND | unix.MS_REC
		if !writable {
			f |= unix.MS_RDONLY
		}
		view = append(view, &configs.Mount{Source: src, Device: "bind", Destination: dst, Flags: f, PropagationFlags: []int{unix.MS_PRIVATE}})
	}
	hierarchies, err := cgroups.GetCgroupMounts(false)
	if err != nil {
		return nil, fmt.Errorf("listing cgroup hierarchies: %w", err)
	}
	// The payload is created later, by libcontainer, in every hierarchy
	// where its parent, the limits cgroup, already is.
	exists := func(dir string) bool {
		_, err := os.Stat(dir)
		return err == nil || !errors.Is(err, os.ErrNotExist)
	}
	for _, h := range hierarchies {
		base := filepath.Base(h.Mountpoint)
		src := filepath.Join(h.Mountpoint, payloadRel)
		if !exists(filepath.Dir(src)) {
			continue
		}
		writable := controllers || delegate && (slices.Contains(h.Subsystems, "systemd") || slices.Contains(h.Subsystems, "name=systemd"))
		bind(src, filepath.Join(cgroupRoot, base), writable)
		// A co-mounted hierarchy (cpu,cpuacct) is reachable under each
		// of its names, as on the host, where these are symlinks.
		if strings.Contains(base, ",") {
			for _, name := range strings.Split(base, ",") {
				bind(src, filepath.Join(cgroupRoot, name), writable)
			}
		}
	}
	if cgroups.IsCgroup2HybridMode() {
		src := filepath.Join(cgroupRoot, "unified", payloadRel)
		if exists(filepath.Dir(src)) {
			bind(src, filepath.Join(cgroupRoot, "unified"), delegate)
		}
	}
	return view, nil
}

// unifiedCgroupMount gives the container the unified layout on a hybrid
// host (oci.CgroupLayoutAnnotation): /sys/fs/cgroup is the cgroup2
// hierarchy alone, its payload cgroup there, which its cgroup namespace
// shows as /. Writable when the spec's cgroup mount is (the systemd
// profile's delegated subtree, --privileged, writable-cgroups); the
// limits cgroup above it is out of sight either way. The v1 hierarchies
// are not mounted: what systemd finds is a v2 host's layout. On a v2 host
// that is libcontainer's own mount, left as it is; a host with no cgroup2
// cannot give the layout, and the start fails.
func unifiedCgroupMount(config *configs.Config, payloadRel string, _, _ bool) error {
	if cgroups.IsCgroup2UnifiedMode() {
		return nil
	}
	if !cgroups.IsCgroup2HybridMode() {
		return errdefs.InvalidParameter(errors.New("the unified cgroup layout needs cgroup2, which this host does not mount at /sys/fs/cgroup/unified"))
	}
	i := slices.IndexFunc(config.Mounts, func(m *configs.Mount) bool {
		return m.Device == "cgroup" && path.Clean(m.Destination) == cgroupRoot
	})
	if i < 0 {
		return nil // the user's own mount at /sys/fs/cgroup
	}
	f := unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_BIND | unix.MS_REC | config.Mounts[i].Flags&unix.MS_RDONLY
	// The payload does not exist yet (libcontainer makes it below the
	// limits cgroup before it mounts anything); the bind then finds it.
	config.Mounts[i] = &configs.Mount{
		Source: filepath.Join(cgroupRoot, "unified", payloadRel), Device: "bind", Destination: cgroupRoot,
		Flags: f, PropagationFlags: []int{unix.MS_PRIVATE},
	}
	return nil
}
