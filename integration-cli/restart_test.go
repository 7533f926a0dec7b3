//go:build integration

package integrationcli

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The shim design: kill -9 of dockerd leaves containers running; a new
// dockerd finds them, their logs go on, and stop and rm work.
func TestDaemonKillLeavesContainersRunning(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	ticker := remember(d.MustCLI(t, "run", "-d", "--name", "ticker", "busybox", "sh", "-c",
		`trap 'exit 0' TERM; i=0; while true; do echo tick$i; i=$((i+1)); sleep 0.2; done`))
	ender := remember(d.MustCLI(t, "run", "-d", "--name", "ender", "busybox", "sh", "-c", "sleep 1; exit 42"))
	pid, _ := strconv.Atoi(d.MustCLI(t, "inspect", "--format", "{{.State.Pid}}", "ticker"))
	if pid <= 0 {
		t.Fatal("no pid")
	}

	d.Kill(t)
	time.Sleep(1500 * time.Millisecond) // "ender" exits while no daemon runs
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("container died with the daemon: %v", err)
	}

	d.Start(t)
	out := d.MustCLI(t, "ps", "--format", "{{.Names}} {{.State}}")
	if !strings.Contains(out, "ticker running") {
		t.Fatalf("running container not found after restart: %q\n%s", out, d.Log())
	}
	if st := d.MustCLI(t, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "ender"); st != "exited 42" {
		t.Fatalf("exit during downtime not recorded: %q", st)
	}
	before := strings.Count(d.MustCLI(t, "logs", "ticker"), "tick")
	waitFor(t, func() bool { return strings.Count(d.CLI("logs", "ticker").Stdout, "tick") > before+2 })

	// wait, started before the stop, must see the exit.
	waited := make(chan Result, 1)
	go func() { waited <- d.CLI("wait", "ticker") }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	d.MustCLI(t, "stop", "ticker")
	if time.Since(start) > 5*time.Second {
		t.Errorf("stop after restart took %s", time.Since(start))
	}
	select {
	case r := <-waited:
		if strings.TrimSpace(r.Stdout) != "0" {
			t.Errorf("wait after restart: %s", r)
		}
	case <-time.After(10 * time.Second):
		t.Error("wait did not return")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Error("container process still alive after stop")
	}
	d.MustCLI(t, "rm", ticker, ender)
}

// A torn or corrupt record never costs the other containers.
func TestCorruptStateFileIsIsolated(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	good := remember(d.MustCLI(t, "create", "--name", "good", "busybox"))
	bad := remember(d.MustCLI(t, "create", "--name", "bad", "busybox"))
	d.Stop(t)
	path := d.Root + "/containers/" + bad + "/config.v2.json"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b[:len(b)/2], 0o600) // as a crash mid-write would
	d.Start(t)
	if out := d.MustCLI(t, "ps", "-a", "--format", "{{.Names}}"); out != "good" {
		t.Fatalf("after corrupting one record, ps -a: %q", out)
	}
	if !strings.Contains(d.Log(), "corrupt container record") {
		t.Error("the corrupt record was not reported in the log")
	}
	d.MustCLI(t, "rm", good)
	os.RemoveAll(d.Root + "/containers/" + bad)
}
