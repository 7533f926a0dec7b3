//go:build integration

package integrationcli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sdContainerInNestedHost runs a systemd container (the systemd image,
// with D-Bus) named name on the engine inside h, and waits for its boot.
// runArgs are more options for its docker run.
func sdContainerInNestedHost(t *testing.T, h *nestedHost, name string, runArgs ...string) string {
	t.Helper()
	if !strings.Contains(h.MustInner("images", "--format", "{{.Repository}}"), "sdimg") {
		out, err := exec.Command(repoRoot + "/hack/images/systemd.sh").Output()
		if err != nil {
			t.Fatalf("systemd image: %v", err)
		}
		copyFile(t, strings.TrimSpace(string(out)), filepath.Join(h.Dir, "systemd.tar"))
		h.MustInner("import", "-c", `CMD ["/sbin/init"]`, "/itm/systemd.tar", "sdimg")
	}
	id := h.MustInner(append(append([]string{"run", "-d", "--name", name}, runArgs...), "sdimg")...)
	for i := 0; ; i++ {
		st := strings.TrimSpace(h.Inner("exec", name, "systemctl", "is-system-running", "--wait").Stdout)
		if st == "running" || st == "degraded" {
			break
		}
		if i > 60 {
			t.Fatalf("%s did not boot: %q\n%s", name, st, h.Inner("logs", name).Stdout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return id
}

// TestMachinedToolsNestedHost: the host's tools reach a systemd container
// (with D-Bus) registered with machined, as they do an nspawn container;
// poweroff and terminate stop it as docker stop and docker kill do, and
// docker's state follows.
func TestMachinedToolsNestedHost(t *testing.T) {
	h := startNestedHost(t)
	id := sdContainerInNestedHost(t, h, "sdc")
	listed := func() bool {
		for _, l := range strings.Split(h.MustIn("machinectl", "list", "--no-legend", "--no-pager"), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "sdc" && f[1] == "container" {
				return true
			}
		}
		return false
	}
	if !listed() {
		t.Fatalf("sdc not listed by machinectl")
	}
	must := func(what string, args ...string) string {
		t.Helper()
		r := h.In(append([]string{"timeout", "60"}, args...)...)
		if r.Code != 0 {
			t.Errorf("%s: %s", what, r)
		}
		return r.Stdout
	}

	// journalctl -M reads the container's journal (through machined: its
	// leader's root, where the journal directory is bound).
	h.MustInner("exec", "sdc", "logger", "-t", "ittag", "marker-"+id[:12])
	var journal string
	for i := 0; i < 50 && !strings.Contains(journal, "marker-"+id[:12]); i++ {
		time.Sleep(100 * time.Millisecond)
		journal = must("journalctl -M", "journalctl", "-M", "sdc", "--no-pager", "-t", "ittag")
	}
	if !strings.Contains(journal, "marker-"+id[:12]) {
		t.Errorf("journalctl -M sdc lacks the container's message:\n%s", journal)
	}
	// machinectl shell runs a command in the container, through its
	// systemd over its D-Bus.
	if out := must("machinectl shell", "machinectl", "shell", "sdc", "/bin/cat", "/etc/machine-id"); !strings.Contains(out, id[:32]) {
		t.Errorf("machinectl shell: %q, want the container's machine id %s", out, id[:32])
	}
	if out := strings.TrimSpace(must("systemctl -M", "systemctl", "-M", "sdc", "is-system-running")); out != "running" {
		t.Errorf("systemctl -M sdc is-system-running: %q", out)
	}
	if out := must("systemctl -M status", "systemctl", "-M", "sdc", "status", "--no-pager", "-n", "0"); !strings.Contains(out, "State: running") || !strings.Contains(out, "dbus.service") {
		t.Errorf("systemctl -M sdc status:\n%s", out)
	}
	must("systemd-run -M", "systemd-run", "-M", "sdc", "--wait", "-q", "/bin/sh", "-c", "echo ran >/run/itrun")
	if out := h.MustInner("exec", "sdc", "cat", "/run/itrun"); out != "ran" {
		t.Errorf("systemd-run -M sdc did not run in the container: %q", out)
	}
	// machinectl login gets the container's getty on a pty of its own.
	if r := h.In("timeout", "10", "script", "-qc", "machinectl login sdc", "/dev/null"); !strings.Contains(r.Stdout, "login:") {
		t.Errorf("machinectl login: no login prompt: %s", r)
	}

	state := func(want string) {
		t.Helper()
		var st string
		for i := 0; i < 100; i++ {
			if st = h.MustInner("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "sdc"); st == want {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st != want {
			t.Fatalf("state %q, want %q", st, want)
		}
		for i := 0; listed(); i++ {
			if i > 100 {
				t.Fatalf("sdc still registered after it stopped")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// poweroff is docker stop: systemd shuts down cleanly, exit 0.
	h.MustIn("machinectl", "poweroff", "sdc")
	state("exited 0")

	// terminate is docker kill: at once, 137.
	h.MustInner("start", "sdc")
	for i := 0; !listed(); i++ {
		if i > 100 {
			t.Fatalf("sdc not registered again after its start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	h.MustIn("machinectl", "terminate", "sdc")
	state("exited 137")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("machinectl terminate took %s, want a docker kill's moment", took)
	}
}
