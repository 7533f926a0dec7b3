//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/internal/testenv"
)

// userNSMount tries what the 2015 fork's unconditional allowances let any
// process in a systemd container do: create a user namespace and mount in
// it. util-linux's unshare (Debian) and busybox's applet both take -Urm.
// The target is /tmp: the busybox image has no /mnt, and a probe that fails
// for want of a directory would prove nothing.
var userNSMount = []string{"unshare", "-Urm", "sh", "-c", "mount -t tmpfs x /tmp && echo MOUNTED"}

// seccompOf reads the seccomp section of the OCI config the daemon wrote
// for a running container (nil when there is none).
func seccompOf(t *testing.T, id string) *specs.LinuxSeccomp {
	t.Helper()
	s := ociSpec(t, id)
	if s.Linux == nil {
		return nil
	}
	return s.Linux.Seccomp
}

// bootSystemd runs the systemd image with --init=systemd and the extra
// options, and waits until systemd reports running with no failed unit.
func bootSystemd(t *testing.T, opts ...string) string {
	t.Helper()
	args := append(append([]string{"run", "-d", "--init=systemd"}, opts...), systemdImage)
	id := remember(shared.MustCLI(t, args...))
	t.Cleanup(func() { shared.CLI("rm", "-f", id) })
	boot := waitBooted(t, id)
	if state := strings.TrimSpace(shared.CLI("exec", id, "systemctl", "is-system-running").Stdout); state != "running" {
		t.Fatalf("systemd %v: %s, want running; failed units: %s", opts, state,
			shared.CLI("exec", id, "systemctl", "--failed", "--no-legend").Stdout)
	}
	t.Logf("systemd %v: running after %s", opts, boot)
	return id
}

// Neither a plain container nor a systemd one can create a user namespace
// and mount in it with the default profile: the systemd profile adds no
// seccomp allowance that opens it.
func TestSeccompUserNamespaceRefused(t *testing.T) {
	needSystemdImage(t)
	// Control: without seccomp the same command works on this host, so
	// the refusals below are seccomp's doing, not a missing tool or a host
	// that refuses user namespaces to everyone.
	r := shared.CLI(append([]string{"run", "--rm", "--security-opt", "seccomp=unconfined", "busybox"}, userNSMount...)...)
	// A host that refuses user namespaces to everyone leaves nothing to
	// test: a skip under plain go test, a failure in CI.
	testenv.Require(t, strings.Contains(r.Stdout, "MOUNTED"),
		"a host that lets an unconfined container make a user namespace and mount in it (control probe: "+r.String()+")")

	r = shared.CLI(append([]string{"run", "--rm", "busybox"}, userNSMount...)...)
	if r.Code == 0 || strings.Contains(r.Stdout, "MOUNTED") {
		t.Errorf("plain busybox container: user namespace + mount worked: %s", r)
	}

	id := bootSystemd(t)
	r = shared.CLI(append([]string{"exec", id}, userNSMount...)...)
	if r.Code == 0 || strings.Contains(r.Stdout, "MOUNTED") {
		t.Errorf("systemd container: user namespace + mount worked: %s", r)
	}
	if !strings.Contains(r.Stderr, "Operation not permitted") {
		t.Errorf("systemd container: unshare should fail with EPERM: %s", r)
	}
	// The seccomp the systemd container runs under is the default profile
	// itself: measured, systemd needs nothing more (docs/seccomp-systemd.md).
	plain := remember(shared.MustCLI(t, "run", "-d", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", plain)
	if got, want := seccompOf(t, id), seccompOf(t, plain); want == nil || !reflect.DeepEqual(got, want) {
		t.Errorf("systemd container's profile differs from the default profile (%d rules, default %d)", len(rulesOf(got)), len(rulesOf(want)))
	}
	if st := shared.MustCLI(t, "exec", id, "grep", "^Seccomp:", "/proc/1/status"); !strings.HasSuffix(st, "2") {
		t.Errorf("systemd PID 1 not filtered: %q", st)
	}
}

func rulesOf(p *specs.LinuxSeccomp) []specs.LinuxSyscall {
	if p == nil {
		return nil
	}
	return p.Syscalls
}

// A profile given with --security-opt seccomp=FILE is used as written for
// a systemd container: nothing is merged into it.
func TestSeccompUserProfileAsWritten(t *testing.T) {
	needSystemdImage(t)
	// Everything allowed except syncfs, refused with an errno no default
	// rule uses (EXDEV), so that a refusal can only come from this profile.
	profile := filepath.Join(t.TempDir(), "profile.json")
	body := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["syncfs"],"action":"SCMP_ACT_ERRNO","errnoRet":18}]}`
	if err := os.WriteFile(profile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	id := bootSystemd(t, "--security-opt", "seccomp="+profile)
	if r := shared.CLI("exec", id, "sync", "-f", "/"); r.Code == 0 || !strings.Contains(r.Stderr, "Invalid cross-device link") {
		t.Errorf("sync -f (syncfs) under the user's profile: %s", r)
	}
	got := seccompOf(t, id)
	if got == nil || got.DefaultAction != specs.ActAllow || len(got.Syscalls) != 1 || !reflect.DeepEqual(got.Syscalls[0].Names, []string{"syncfs"}) {
		t.Fatalf("systemd container's profile is not the user's as written: %+v", got)
	}
	// The same profile on a plain container gives the same section.
	plain := remember(shared.MustCLI(t, "run", "-d", "--security-opt", "seccomp="+profile, "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", plain)
	if want := seccompOf(t, plain); !reflect.DeepEqual(got, want) {
		t.Errorf("user's profile: systemd container has %+v, plain container %+v", got, want)
	}
}

// seccomp=unconfined stays unconfined for a systemd container: no seccomp
// section in its config, no filter on PID 1, and systemd still boots.
func TestSeccompUnconfinedSystemd(t *testing.T) {
	needSystemdImage(t)
	id := bootSystemd(t, "--security-opt", "seccomp=unconfined")
	if got := seccompOf(t, id); got != nil {
		t.Errorf("unconfined systemd container has a seccomp profile: %d rules", len(got.Syscalls))
	}
	if st := shared.MustCLI(t, "exec", id, "grep", "^Seccomp:", "/proc/1/status"); !strings.HasSuffix(st, "0") {
		t.Errorf("unconfined systemd PID 1 is filtered: %q", st)
	}
}
