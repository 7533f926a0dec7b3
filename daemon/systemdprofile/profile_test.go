package systemdprofile

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/daemon/oci"
)

// builtSpec is a spec as oci.Build makes it, with the user's mounts.
func builtSpec(t *testing.T, user ...specs.Mount) *specs.Spec {
	t.Helper()
	s, err := oci.Build(oci.SpecOptions{ID: "abc", Rootfs: "/r", Args: []string{"/sbin/init"}, Mounts: user})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mountAt(s *specs.Spec, dst string) []specs.Mount {
	var out []specs.Mount
	for _, m := range s.Mounts {
		if m.Destination == dst {
			out = append(out, m)
		}
	}
	return out
}

func TestApplyDefaults(t *testing.T) {
	s := builtSpec(t)
	Apply(s, Options{DefaultSeccomp: true, Prepared: Prepared{JournalDir: "/host/journal/0123"}})
	for dst, typ := range map[string]string{
		"/run": "tmpfs", "/run/lock": "tmpfs", "/tmp": "tmpfs", "/var/log/journal/0123": "bind",
	} {
		ms := mountAt(s, dst)
		if len(ms) != 1 || ms[0].Type != typ {
			t.Errorf("%s: %+v, want one %s", dst, ms, typ)
		}
	}
	if j := mountAt(s, "/var/log/journal/0123"); len(j) == 1 && j[0].Source != "/host/journal/0123" {
		t.Errorf("journal source %q", j[0].Source)
	}
	if !slices.Contains(mountAt(s, "/run")[0].Options, "tmpcopyup") || slices.Contains(mountAt(s, "/tmp")[0].Options, "tmpcopyup") {
		t.Errorf("only /run and /run/lock are seeded from the image")
	}
	cg := mountAt(s, "/sys/fs/cgroup")
	if len(cg) != 1 || cg[0].Type != "cgroup" || !slices.Contains(cg[0].Options, "rw") || slices.Contains(cg[0].Options, "ro") {
		t.Errorf("cgroup mount not delegated: %+v", cg)
	}
	if !slices.Contains(s.Process.Env, "container=docker") {
		t.Errorf("env %q lacks container=docker", s.Process.Env)
	}
	if s.Annotations[oci.ConsoleAnnotation] != oci.ConsolePTY {
		t.Errorf("no console pty asked for: %v", s.Annotations)
	}
	// Parents are mounted before their children.
	for i, m := range s.Mounts {
		for _, later := range s.Mounts[i+1:] {
			if strings.HasPrefix(m.Destination, later.Destination+"/") {
				t.Errorf("%s is mounted before its parent %s", m.Destination, later.Destination)
			}
		}
	}
}

func TestApplyUserMountsWin(t *testing.T) {
	bind := func(dst string) specs.Mount {
		return specs.Mount{Destination: dst, Type: "bind", Source: "/host" + dst, Options: []string{"rbind"}}
	}
	for _, tc := range []struct {
		user specs.Mount
		// kept: profile mounts that must still be there.
		kept []string
	}{
		{bind("/run"), []string{"/run/lock", "/tmp"}},
		{bind("/run/lock"), []string{"/run", "/tmp"}},
		{bind("/tmp"), []string{"/run", "/run/lock"}},
		{bind("/run/foo"), []string{"/run", "/run/lock", "/tmp"}},
	} {
		s := builtSpec(t, tc.user)
		Apply(s, Options{})
		if got := mountAt(s, tc.user.Destination); len(got) != 1 || got[0].Type != "bind" {
			t.Errorf("user %s: %+v, want the user's bind alone", tc.user.Destination, got)
		}
		for _, k := range tc.kept {
			if ms := mountAt(s, k); len(ms) != 1 || ms[0].Type != "tmpfs" {
				t.Errorf("user %s: profile's %s is %+v", tc.user.Destination, k, ms)
			}
		}
		// A user mount below /run comes after the /run tmpfs.
		run := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/run" })
		foo := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/run/foo" })
		if foo >= 0 && foo < run {
			t.Errorf("/run/foo is hidden by the /run tmpfs: %v", s.Mounts)
		}
	}
	// A user's bind at /sys/fs/cgroup replaces the engine's cgroup mount
	// and is not made writable.
	user := specs.Mount{Destination: "/sys/fs/cgroup", Type: "bind", Source: "/sys/fs/cgroup", Options: []string{"rbind", "ro"}}
	s := builtSpec(t, user)
	Apply(s, Options{})
	if cg := mountAt(s, "/sys/fs/cgroup"); len(cg) != 1 || cg[0].Type != "bind" || !slices.Contains(cg[0].Options, "ro") {
		t.Errorf("user's /sys/fs/cgroup: %+v", cg)
	}
	// A user's container= wins.
	s = builtSpec(t)
	s.Process.Env = append(s.Process.Env, "container=mine")
	Apply(s, Options{})
	if slices.Contains(s.Process.Env, "container=docker") {
		t.Errorf("container=docker added over the user's: %q", s.Process.Env)
	}
}

func TestApplySeccompOnlyOnDefault(t *testing.T) {
	s := builtSpec(t)
	n := len(s.Linux.Seccomp.Syscalls)
	custom := *s.Linux.Seccomp
	custom.Syscalls = slices.Clone(custom.Syscalls)
	s.Linux.Seccomp = &custom
	Apply(s, Options{DefaultSeccomp: false})
	if len(s.Linux.Seccomp.Syscalls) != n {
		t.Errorf("a user's profile was changed: %d rules, had %d", len(s.Linux.Seccomp.Syscalls), n)
	}
	s = builtSpec(t)
	s.Linux.Seccomp = nil // unconfined
	Apply(s, Options{DefaultSeccomp: true})
	if s.Linux.Seccomp != nil {
		t.Error("an unconfined container got a seccomp profile")
	}
}

func TestPrepare(t *testing.T) {
	const mid = "0123456789abcdef0123456789abcdef"
	rootfs, state, journal := t.TempDir(), t.TempDir(), t.TempDir()
	// An image's own machine ID is replaced: it would win in systemd.
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc/machine-id"), []byte("ffffffffffffffffffffffffffffffff\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(Rootfs{Path: rootfs, StateDir: state, MachineID: mid, JournalRoot: journal}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(rootfs, "etc/machine-id")); string(b) != mid+"\n" {
		t.Errorf("machine-id %q", b)
	}
	if p.MachineIDFile != "" || p.JournalDir != filepath.Join(journal, mid) {
		t.Errorf("prepared %+v", p)
	}
	if fi, err := os.Stat(p.JournalDir); err != nil || !fi.IsDir() {
		t.Errorf("journal dir: %v", err)
	}
	if err := RemoveJournal(journal, p.JournalDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.JournalDir); !os.IsNotExist(err) {
		t.Errorf("journal dir not removed: %v", err)
	}
	// RemoveJournal touches nothing outside the journal root.
	if err := RemoveJournal(journal, state); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); err != nil {
		t.Errorf("RemoveJournal removed %s", state)
	}

	// A read-only root gets a file to bind; a symlinked /etc cannot lead
	// the write out of the rootfs.
	p, err = Prepare(Rootfs{Path: rootfs, ReadOnly: true, StateDir: state, MachineID: mid, JournalRoot: journal}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p.MachineIDFile); filepath.Dir(p.MachineIDFile) != state || string(b) != mid+"\n" {
		t.Errorf("read-only: %+v %q", p, b)
	}
	evil, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(evil, "etc")); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(Rootfs{Path: evil, StateDir: state, MachineID: mid, JournalRoot: journal}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "machine-id")); err == nil {
		t.Error("machine-id written through a symlink out of the rootfs")
	}

	// The user's mounts win: /var covers the journal, /etc/machine-id
	// is the user's, /run covers /run/host; no host journal without a
	// persistent journal.
	user := []specs.Mount{{Destination: "/var"}, {Destination: "/etc/machine-id"}, {Destination: "/run"}}
	p, err = Prepare(Rootfs{Path: t.TempDir(), StateDir: state, MachineID: mid, JournalRoot: journal}, user)
	if err != nil || !reflect.DeepEqual(p, Prepared{}) {
		t.Errorf("with user mounts: %+v, %v", p, err)
	}
	p, err = Prepare(Rootfs{Path: t.TempDir(), StateDir: state, MachineID: mid, JournalRoot: filepath.Join(journal, "absent")}, nil)
	if err != nil || p.JournalDir != "" {
		t.Errorf("without a host journal: %+v, %v", p, err)
	}
}

// A stop of the scope from the host is a docker kill; the user's own
// KillSignal annotation wins.
func TestApplyScopeKillSignal(t *testing.T) {
	s := builtSpec(t)
	Apply(s, Options{})
	if got := s.Annotations[ScopeKillSignalAnnotation]; got != "9" {
		t.Errorf("scope KillSignal annotation %q, want 9", got)
	}
	s = builtSpec(t)
	s.Annotations = map[string]string{ScopeKillSignalAnnotation: "15"}
	Apply(s, Options{})
	if got := s.Annotations[ScopeKillSignalAnnotation]; got != "15" {
		t.Errorf("the user's KillSignal replaced by %q", got)
	}
}
