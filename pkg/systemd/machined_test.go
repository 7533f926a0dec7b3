package systemd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/pkg/errdefs"
)

// leader starts a process in its own *.scope cgroup (machined derives the
// machine's unit from the leader's cgroup and refuses anything else), in
// both the name=systemd v1 and the cgroup2 hierarchies of a hybrid host.
func leader(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	rel := filepath.Join("sdtest.slice", fmt.Sprintf("sdtest-%d.scope", pid))
	var dirs []string
	for _, h := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue
		}
		d := filepath.Join(h, rel)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, d := range dirs {
			for i := 0; i < 50 && os.Remove(d) != nil; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			_ = os.Remove(filepath.Dir(d)) // the slice; fails while others use it
		}
	})
	return pid
}

func machinectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("machinectl", append([]string{"--no-pager", "--no-legend"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("machinectl %v: %v: %s", args, err, out)
	}
	return string(out)
}

func listed(t *testing.T, name string) bool {
	for _, l := range strings.Split(machinectl(t, "list"), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}

func TestRegisterAndUnregister(t *testing.T) {
	needMachined(t)
	ctx := context.Background()
	m := NewMachined()
	defer m.Close()
	pid := leader(t)
	name := MachineName("/it-reg", testID)
	root := t.TempDir()
	if err := m.RegisterMachine(ctx, name, MachineID(testID), "docker", "container", pid, root); err != nil {
		t.Fatal(err)
	}
	if !listed(t, name) {
		t.Fatalf("%s not in machinectl list", name)
	}
	show := machinectl(t, "show", name, "-p", "Id", "-p", "Class", "-p", "Service", "-p", "Leader", "-p", "RootDirectory", "-p", "Unit")
	for _, want := range []string{
		"Id=" + testID[:32], "Class=container", "Service=docker",
		fmt.Sprintf("Leader=%d", pid), "RootDirectory=" + root,
		fmt.Sprintf("Unit=sdtest-%d.scope", pid),
	} {
		if !strings.Contains(show, want+"\n") {
			t.Errorf("machinectl show lacks %q:\n%s", want, show)
		}
	}
	// A second registration of the same name is a conflict.
	err := m.RegisterMachine(ctx, name, MachineID(testID), "docker", "container", pid, root)
	if !errdefs.IsConflict(err) {
		t.Errorf("second RegisterMachine: %v, want a conflict", err)
	}
	if err := m.UnregisterMachine(ctx, name); err != nil {
		t.Fatal(err)
	}
	if listed(t, name) {
		t.Fatalf("%s still listed after UnregisterMachine", name)
	}
	if err := m.UnregisterMachine(ctx, name); !errdefs.IsNotFound(err) {
		t.Errorf("UnregisterMachine of an unknown machine: %v, want not found", err)
	}
}

func TestRegisterLongAndInvalidNames(t *testing.T) {
	needMachined(t)
	ctx := context.Background()
	pid := leader(t)
	m := NewMachined()
	defer m.Close()
	long := strings.Repeat("n", 70)
	name := MachineName("/"+long, testID)
	if len(name) != 64 {
		t.Fatalf("70-char name became %q", name)
	}
	if err := m.RegisterMachine(ctx, name, MachineID(testID), "docker", "container", pid, "/"); err != nil {
		t.Fatal(err)
	}
	if !listed(t, name) {
		t.Fatalf("%s not listed", name)
	}
	if err := m.UnregisterMachine(ctx, name); err != nil {
		t.Fatal(err)
	}

	// machined (systemd 252) rejects '_'; MachineName maps it.
	raw := "web_app"
	if err := m.RegisterMachine(ctx, raw, [16]byte{}, "docker", "container", pid, "/"); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("machined accepted %q or failed otherwise: %v", raw, err)
	}
	name = MachineName(raw, testID)
	if err := m.RegisterMachine(ctx, name, [16]byte{}, "docker", "container", pid, "/"); err != nil {
		t.Fatal(err)
	}
	if !listed(t, name) {
		t.Fatalf("%s not listed", name)
	}
	if err := m.UnregisterMachine(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterMachine(ctx, "x", [16]byte{}, "docker", "container", 0, "/"); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("leader 0: %v", err)
	}
}

// A machined without UnregisterMachine answers UnknownMethod; the client
// then falls back to TerminateMachine. Pretend ours lacks it by asking for
// a method that does not exist. (Standalone machined cannot terminate:
// that needs systemd1, so the fallback's own error is what we see.)
func TestUnregisterFallsBackToTerminate(t *testing.T) {
	needMachined(t)
	ctx := context.Background()
	pid := leader(t)
	m := NewMachined()
	defer m.Close()
	if err := m.RegisterMachine(ctx, "fallback", [16]byte{}, "docker", "container", pid, "/"); err != nil {
		t.Fatal(err)
	}
	m.unregisterMethod = "NoSuchUnregisterMachine"
	err := m.UnregisterMachine(ctx, "fallback")
	if errdefs.ClassOf(err) == errdefs.ClassNotImplemented || isDBusError(err, errUnknownMth) {
		t.Fatalf("no fallback: %v", err)
	}
	t.Logf("TerminateMachine (fallback) answered: %v", err)
	m.unregisterMethod = "UnregisterMachine"
	// Whether the fallback worked (real systemd) or not (standalone), the
	// real method removes what is left.
	if err := m.UnregisterMachine(ctx, "fallback"); err != nil && !errdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	if listed(t, "fallback") {
		t.Fatal("fallback still listed")
	}
}

// The connection is made once and made again after the bus went away.
func TestReconnectAfterBusRestart(t *testing.T) {
	needMachined(t)
	ctx := context.Background()
	m := NewMachined()
	defer m.Close()
	if err := m.UnregisterMachine(ctx, "nosuch"); !errdefs.IsNotFound(err) {
		t.Fatalf("before restart: %v", err)
	}
	first := m.conn
	stopBus()
	if err := m.UnregisterMachine(ctx, "nosuch"); err == nil {
		t.Fatal("call succeeded without a bus")
	}
	if err := startBus(); err != nil {
		t.Fatal(err)
	}
	if err := m.UnregisterMachine(ctx, "nosuch"); !errdefs.IsNotFound(err) {
		t.Fatalf("after restart: %v", err)
	}
	if m.conn == first {
		t.Fatal("still the old connection")
	}
	conn := m.conn
	if err := m.UnregisterMachine(ctx, "nosuch"); !errdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	if m.conn != conn {
		t.Fatal("a new connection for every call")
	}
}
