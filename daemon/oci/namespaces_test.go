package oci

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func nsPath(s *specs.Spec, t specs.LinuxNamespaceType) (string, bool) {
	for _, n := range s.Linux.Namespaces {
		if n.Type == t {
			return n.Path, true
		}
	}
	return "", false
}

func TestBuildNamespaceShares(t *testing.T) {
	o := baseOpts()
	o.PID = NamespaceShare{Host: true}
	o.IPC = NamespaceShare{Path: "/proc/42/ns/ipc"}
	o.UTS = NamespaceShare{Host: true}
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if hasNS(s, specs.PIDNamespace) {
		t.Error("--pid host: the spec asks for a PID namespace")
	}
	if hasNS(s, specs.UTSNamespace) || s.Hostname != "" {
		t.Errorf("--uts host: UTS namespace %v, hostname %q", hasNS(s, specs.UTSNamespace), s.Hostname)
	}
	if p, ok := nsPath(s, specs.IPCNamespace); !ok || p != "/proc/42/ns/ipc" {
		t.Errorf("--ipc container: IPC namespace %v %q", ok, p)
	}
	for _, k := range []specs.LinuxNamespaceType{specs.MountNamespace, specs.NetworkNamespace} {
		if !hasNS(s, k) {
			t.Errorf("namespace %s missing", k)
		}
	}

	o = baseOpts()
	o.PID = NamespaceShare{Path: "/proc/7/ns/pid"}
	s, err = Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := nsPath(s, specs.PIDNamespace); p != "/proc/7/ns/pid" {
		t.Errorf("--pid container: %q", p)
	}
	if p, ok := nsPath(s, specs.IPCNamespace); !ok || p != "" {
		t.Errorf("default IPC: %v %q", ok, p)
	}
	if s.Hostname != "h" {
		t.Errorf("hostname %q", s.Hostname)
	}
}

func TestBuildShm(t *testing.T) {
	shmOpts := []string{"nosuid", "nodev", "noexec"}
	t.Run("private", func(t *testing.T) {
		o := baseOpts()
		o.ShmSize = 1 << 20
		s, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		m := findMount(s, "/dev/shm")
		if m == nil || m.Type != "tmpfs" || !slices.Contains(m.Options, "size=1048576") || !slices.Contains(m.Options, "mode=1777") {
			t.Fatalf("private /dev/shm: %+v", m)
		}
		for _, opt := range shmOpts {
			if !slices.Contains(m.Options, opt) {
				t.Errorf("private /dev/shm without %s: %v", opt, m.Options)
			}
		}
	})
	t.Run("default size", func(t *testing.T) {
		s, err := Build(baseOpts())
		if err != nil {
			t.Fatal(err)
		}
		if m := findMount(s, "/dev/shm"); m == nil || !slices.Contains(m.Options, "size=67108864") {
			t.Fatalf("default /dev/shm: %+v", m)
		}
	})
	t.Run("none", func(t *testing.T) {
		o := baseOpts()
		o.NoShm = true
		s, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		if m := findMount(s, "/dev/shm"); m != nil {
			t.Fatalf("--ipc none has a /dev/shm: %+v", m)
		}
		if !hasNS(s, specs.IPCNamespace) {
			t.Error("--ipc none: no IPC namespace of its own")
		}
	})
	t.Run("bound", func(t *testing.T) {
		o := baseOpts()
		o.ShmSource = "/var/lib/docker/containers/abc/mounts/shm"
		s, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		m := findMount(s, "/dev/shm")
		if m == nil || m.Type != "bind" || m.Source != o.ShmSource || slices.Contains(m.Options, "rbind") {
			t.Fatalf("bound /dev/shm: %+v", m)
		}
		for _, opt := range shmOpts {
			if !slices.Contains(m.Options, opt) {
				t.Errorf("bound /dev/shm without %s: %v", opt, m.Options)
			}
		}
	})
	t.Run("the user's mount wins", func(t *testing.T) {
		o := baseOpts()
		o.ShmSource = "/x"
		o.Mounts = []specs.Mount{{Destination: "/dev/shm", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1k"}}}
		s, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range s.Mounts {
			if m.Destination == "/dev/shm" {
				n++
				if m.Source != "tmpfs" {
					t.Errorf("/dev/shm: %+v", m)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d mounts at /dev/shm", n)
		}
	})
}
