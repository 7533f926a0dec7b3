package shim

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// On a v1 or hybrid host the container's /sys/fs/cgroup is a read-only
// tmpfs with every controller read-only; a delegated subtree makes
// name=systemd (and a hybrid host's cgroup2) writable, and writable-cgroups
// every hierarchy's payload cgroup, never the tmpfs above them.
func TestCgroupViewReadOnlyControllers(t *testing.T) {
	if cgroups.IsCgroup2UnifiedMode() {
		// A v2 host keeps libcontainer's cgroup2 mount of the namespace's
		// root, read-only unless delegated.
		c := &configs.Config{Mounts: []*configs.Mount{{Device: "cgroup", Destination: cgroupRoot, Flags: unix.MS_RDONLY}}}
		if err := confineCgroupMount(c, "/x", false, true); err != nil || len(c.Mounts) != 1 || c.Mounts[0].Device != "cgroup" {
			t.Errorf("v2: %v %+v", err, c.Mounts)
		}
		return
	}
	for _, mode := range []struct{ delegate, controllers bool }{{false, false}, {true, false}, {true, true}} {
		delegate := mode.delegate
		// "/x" below each hierarchy's root, whose parent (the root) exists.
		view, err := cgroupView("/x", delegate, mode.controllers)
		if err != nil {
			t.Fatal(err)
		}
		if len(view) < 2 || view[0].Device != "tmpfs" || view[0].Destination != cgroupRoot || view[0].Flags&unix.MS_RDONLY == 0 {
			t.Fatalf("the view does not start with a read-only tmpfs: %+v", view[0])
		}
		sawSystemd := false
		for _, m := range view[1:] {
			name := filepath.Base(m.Destination)
			writable := m.Flags&unix.MS_RDONLY == 0
			if m.Device != "bind" || !strings.HasSuffix(m.Source, "/x") {
				t.Errorf("%s: %+v, want a bind of the payload cgroup", name, m)
			}
			switch name {
			case "systemd", "unified":
				sawSystemd = sawSystemd || name == "systemd"
				if writable != delegate {
					t.Errorf("%s writable=%v with delegate=%v", name, writable, delegate)
				}
			default:
				if writable != mode.controllers {
					t.Errorf("controller %s writable=%v with %+v", name, writable, mode)
				}
			}
		}
		if !sawSystemd {
			t.Errorf("no name=systemd hierarchy in the view: %+v", view)
		}
	}
}

// The unified layout (oci.CgroupLayoutAnnotation): on a hybrid host the
// engine's cgroup mount becomes a bind of the payload's cgroup2 directory
// alone, as writable as the spec's mount was; on a v2 host libcontainer's
// own mount stays; a user's bind is left alone.
func TestUnifiedCgroupMount(t *testing.T) {
	for _, ro := range []bool{true, false} {
		var flags int
		if ro {
			flags = unix.MS_RDONLY
		}
		user := &configs.Mount{Device: "bind", Source: "/srv/cg", Destination: "/sys/fs/cgroup/x"}
		c := &configs.Config{Mounts: []*configs.Mount{{Device: "cgroup", Destination: cgroupRoot, Flags: flags}, user}}
		err := unifiedCgroupMount(c, "/docker/abc/payload", false, false)
		switch {
		case cgroups.IsCgroup2UnifiedMode():
			if err != nil || c.Mounts[0].Device != "cgroup" {
				t.Errorf("v2: %v %+v", err, c.Mounts[0])
			}
		case !cgroups.IsCgroup2HybridMode():
			if err == nil {
				t.Errorf("v1 without cgroup2: no error")
			}
		default:
			m := c.Mounts[0]
			if err != nil || m.Device != "bind" || m.Source != "/sys/fs/cgroup/unified/docker/abc/payload" || m.Destination != cgroupRoot {
				t.Fatalf("hybrid: %v %+v", err, m)
			}
			if (m.Flags&unix.MS_RDONLY != 0) != ro || m.Flags&unix.MS_BIND == 0 || m.Flags&unix.MS_NOSUID == 0 {
				t.Errorf("hybrid, read-only %v: flags %#x", ro, m.Flags)
			}
			if len(c.Mounts) != 2 || c.Mounts[1] != user {
				t.Errorf("the other mounts changed: %+v", c.Mounts)
			}
		}
	}
}
