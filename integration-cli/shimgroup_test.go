//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shimOf is the pid of the live shim serving a container: the one its
// state directory's shim.pid names (pid, then the shim's group
// directory, which is the shim's first argument), 0 if none.
func shimOf(t testing.TB, d *Daemon, id string) int {
	t.Helper()
	return liveShimOf(d, id)
}

func liveShimOf(d *Daemon, id string) int {
	b, err := os.ReadFile(filepath.Join(d.ExecRoot, "containers", id, "shim.pid"))
	if err != nil {
		return 0
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	pid, _ := strconv.Atoi(lines[0])
	if pid <= 0 || len(lines) < 2 {
		return 0
	}
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return 0
	}
	args := strings.Split(string(cmd), "\x00")
	if len(args) < 3 || args[1] != "__shim" || args[2] != lines[1] {
		return 0
	}
	return pid
}

// kill -9 of one shim hosting a group of containers: its containers are
// recorded as exited (255, their processes killed), the daemon says so in
// its log, and the containers of the other group run on, attachable.
func TestShimGroupKilled(t *testing.T) {
	d := NewDaemon(t, "--shim-group-size", "2")
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	var ids []string
	for _, name := range []string{"ga", "gb", "gc"} {
		ids = append(ids, remember(d.MustCLI(t, "run", "-d", "--name", name, "busybox", "sh", "-c",
			`trap 'exit 0' TERM; i=0; while true; do echo tick$i; i=$((i+1)); sleep 0.2; done`)))
	}
	victim := shimOf(t, d, ids[0])
	if victim == 0 || shimOf(t, d, ids[1]) != victim || shimOf(t, d, ids[2]) == victim || shimOf(t, d, ids[2]) == 0 {
		t.Fatalf("shims %d %d %d: not the groups expected", shimOf(t, d, ids[0]), shimOf(t, d, ids[1]), shimOf(t, d, ids[2]))
	}
	pids := map[string]int{}
	for _, name := range []string{"ga", "gb", "gc"} {
		pids[name], _ = strconv.Atoi(d.MustCLI(t, "inspect", "--format", "{{.State.Pid}}", name))
	}

	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ga", "gb"} {
		waitFor(t, func() bool {
			return d.CLI("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name).Stdout == "exited 255\n"
		})
		deadline := time.Now().Add(10 * time.Second)
		for processAlive(pids[name]) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: process %d outlived its shim", name, pids[name])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !strings.Contains(d.Log(), "lost track of container") {
		t.Errorf("the daemon did not log the lost containers:\n%s", d.Log())
	}
	if st := d.MustCLI(t, "inspect", "--format", "{{.State.Status}}", "gc"); st != "running" {
		t.Fatalf("the other group's container: %s", st)
	}
	before := strings.Count(d.MustCLI(t, "logs", "gc"), "tick")
	waitFor(t, func() bool { return strings.Count(d.CLI("logs", "gc").Stdout, "tick") > before+2 })
	if out := d.MustCLI(t, "exec", "gc", "echo", "alive"); out != "alive" {
		t.Fatalf("exec in the other group's container: %q", out)
	}
	// A new container goes to a live shim and runs.
	if out := d.MustCLI(t, "run", "--rm", "busybox", "echo", "new"); out != "new" {
		t.Fatalf("run after the kill: %q", out)
	}
	d.MustCLI(t, "stop", "gc")
	d.MustCLI(t, "rm", "ga", "gb", "gc")
	// The lost containers' processes were killed; having lost their
	// shim they were reparented, and are reaped by the host's init in
	// its own time: wait for that before the leftovers check.
	waitFor(t, func() bool { return !inCgroupOf(ids[0]) && !inCgroupOf(ids[1]) })
}

// inCgroupOf: some process is in a cgroup naming the container.
func inCgroupOf(id string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), id) {
			return true
		}
	}
	return false
}

// processAlive: pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
