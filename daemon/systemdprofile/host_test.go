package systemdprofile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/daemon/oci"
)

const testOSRelease = `# a comment
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian
VARIANT_ID='server'
BUILD_ID="2024-\"06\"-15"
IMAGE_ID=""
not a field
`

func TestHostEnv(t *testing.T) {
	got := hostEnv([]byte(testOSRelease))
	want := []string{
		"container_host_id=debian", "container_host_version_id=12",
		`container_host_build_id=2024-"06"-15`, "container_host_variant_id=server",
	}
	if !slices.Equal(got, want) {
		t.Errorf("hostEnv = %q, want %q", got, want)
	}
	if env := hostEnv(nil); env != nil {
		t.Errorf("empty os-release: %q", env)
	}
}

func TestPrepareRunHost(t *testing.T) {
	const mid = "0123456789abcdef0123456789abcdef"
	state := t.TempDir()
	osr := filepath.Join(t.TempDir(), "os-release")
	if err := os.WriteFile(osr, []byte(testOSRelease), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Rootfs{Path: t.TempDir(), StateDir: state, MachineID: mid, JournalRoot: "/nonexistent", HostOSRelease: osr}
	p, err := Prepare(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.RunHostDir != filepath.Join(state, "run-host") {
		t.Fatalf("RunHostDir %q", p.RunHostDir)
	}
	for name, want := range map[string]string{
		"os-release":        testOSRelease,
		"container-manager": "docker\n",
		"container-uuid":    "01234567-89ab-cdef-0123-456789abcdef\n",
	} {
		f := filepath.Join(p.RunHostDir, name)
		b, err := os.ReadFile(f)
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
		// A copy, not the host's file, and read-only.
		if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o444 {
			t.Errorf("%s: %v %v", name, fi.Mode(), err)
		}
	}
	if len(p.HostEnv) != 4 || p.HostEnv[0] != "container_host_id=debian" {
		t.Errorf("HostEnv %q", p.HostEnv)
	}

	// Without a host os-release: the other files, no variables. A second
	// start rewrites the directory (a stale os-release does not stay).
	r.HostOSRelease = filepath.Join(t.TempDir(), "absent")
	p, err = Prepare(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.RunHostDir, "os-release")); !os.IsNotExist(err) {
		t.Errorf("os-release without a host one: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.RunHostDir, "container-manager")); err != nil || p.HostEnv != nil {
		t.Errorf("no host os-release: %v, %q", err, p.HostEnv)
	}

	// The user's mount at /run/host (or /run, or below /run/host) wins.
	for _, dst := range []string{"/run", "/run/host", "/run/host/credentials"} {
		p, err = Prepare(r, []specs.Mount{{Destination: dst}})
		if err != nil || p.RunHostDir != "" || p.HostEnv != nil {
			t.Errorf("user mount at %s: %+v %v", dst, p, err)
		}
	}
}

func TestApplyContainerInterface(t *testing.T) {
	s := builtSpec(t)
	Apply(s, Options{Prepared: Prepared{RunHostDir: "/state/run-host", HostEnv: []string{"container_host_id=debian", "container_host_version_id=12"}}})
	ms := mountAt(s, "/run/host")
	if len(ms) != 1 || ms[0].Type != "bind" || ms[0].Source != "/state/run-host" || !slices.Contains(ms[0].Options, "ro") {
		t.Fatalf("/run/host: %+v", ms)
	}
	// After the /run tmpfs, which would hide it.
	run := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/run" })
	host := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/run/host" })
	if run < 0 || host < run {
		t.Errorf("/run at %d, /run/host at %d", run, host)
	}
	for _, want := range []string{"container=docker", "container_host_id=debian", "container_host_version_id=12"} {
		if !slices.Contains(s.Process.Env, want) {
			t.Errorf("env %q lacks %s", s.Process.Env, want)
		}
	}
	if slices.ContainsFunc(s.Process.Env, func(kv string) bool { return strings.HasPrefix(kv, "container_ttys=") }) {
		t.Errorf("container_ttys without a tty: %q", s.Process.Env)
	}
	caps := s.Process.Capabilities
	for _, set := range [][]string{caps.Bounding, caps.Effective, caps.Permitted, caps.Inheritable, caps.Ambient} {
		for _, c := range auditCaps {
			if slices.Contains(set, c) {
				t.Errorf("%s still given: %q", c, set)
			}
		}
	}
	if !slices.Contains(caps.Bounding, "CAP_MKNOD") || !slices.Contains(caps.Bounding, "CAP_CHOWN") {
		t.Errorf("other capabilities dropped: %q", caps.Bounding)
	}
}

func TestApplyTTYAndUserWins(t *testing.T) {
	s := builtSpec(t)
	s.Process.Terminal = true
	s.Process.Env = append(s.Process.Env, "container_host_id=mine")
	s.Process.Capabilities.Bounding = append(s.Process.Capabilities.Bounding, "CAP_AUDIT_CONTROL", "CAP_AUDIT_READ")
	Apply(s, Options{CapAdd: []string{"audit_control"}, Prepared: Prepared{HostEnv: []string{"container_host_id=debian"}}})
	// The terminal is /dev/console (libcontainer's): no pty of the shim's
	// over it, and no other pty to name in container_ttys.
	if _, ok := s.Annotations[oci.ConsoleAnnotation]; ok {
		t.Errorf("console pty asked for with -t: %v", s.Annotations)
	}
	if slices.ContainsFunc(s.Process.Env, func(kv string) bool { return strings.HasPrefix(kv, "container_ttys=") }) {
		t.Errorf("container_ttys with the terminal as console: %q", s.Process.Env)
	}
	if !slices.Contains(s.Process.Env, "container_host_id=mine") || slices.Contains(s.Process.Env, "container_host_id=debian") {
		t.Errorf("the user's variable did not win: %q", s.Process.Env)
	}
	b := s.Process.Capabilities.Bounding
	if !slices.Contains(b, "CAP_AUDIT_CONTROL") || slices.Contains(b, "CAP_AUDIT_READ") || slices.Contains(b, "CAP_AUDIT_WRITE") {
		t.Errorf("only the asked-for audit capability stays: %q", b)
	}
	// No mount without a prepared directory (the user's /run/host).
	if ms := mountAt(s, "/run/host"); len(ms) != 0 {
		t.Errorf("/run/host: %+v", ms)
	}
}
