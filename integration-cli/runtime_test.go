//go:build integration

package integrationcli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
)

// An always container whose process dies while no daemon runs comes back
// with the next daemon; an unless-stopped one the user stopped stays
// stopped; on-failure:N restarts N times.
func TestRestartPolicyAcrossDaemonKill(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	always := remember(d.MustCLI(t, "run", "-d", "--restart", "always", "--name", "always", "busybox", "sleep", "1000"))
	stopped := remember(d.MustCLI(t, "run", "-d", "--restart", "unless-stopped", "--name", "stopped", "busybox", "sleep", "1000"))
	d.MustCLI(t, "stop", "-t", "0", "stopped")
	failing := remember(d.MustCLI(t, "run", "-d", "--restart", "on-failure:2", "--name", "failing", "busybox", "false"))
	waitFor(t, func() bool {
		return d.CLI("inspect", "-f", "{{.State.Status}} {{.RestartCount}}", "failing").Stdout == "exited 2\n"
	})
	// --rm and a policy are refused (by our CLI, and by the daemon).
	if r := d.CLI("run", "--rm", "--restart", "always", "busybox", "true"); r.Code == 0 || !strings.Contains(r.Stderr, "Conflicting options: --restart and --rm") {
		t.Errorf("--rm --restart: %s", r)
	}

	pid, _ := strconv.Atoi(d.MustCLI(t, "inspect", "-f", "{{.State.Pid}}", "always"))
	d.Kill(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	d.Start(t)
	waitFor(t, func() bool { return d.CLI("inspect", "-f", "{{.State.Status}}", "always").Stdout == "running\n" })
	if npid, _ := strconv.Atoi(d.MustCLI(t, "inspect", "-f", "{{.State.Pid}}", "always")); npid == pid || npid <= 0 {
		t.Errorf("always container not restarted: pid %d (was %d)", npid, pid)
	}
	if st := d.MustCLI(t, "inspect", "-f", "{{.State.Status}}", "stopped"); st != "exited" {
		t.Errorf("unless-stopped container stopped by the user: %s after a daemon restart", st)
	}
	// A stop is never undone by the policy.
	d.MustCLI(t, "stop", "-t", "0", "always")
	time.Sleep(500 * time.Millisecond)
	if st := d.MustCLI(t, "inspect", "-f", "{{.State.Status}}", "always"); st != "exited" {
		t.Errorf("always container after stop: %s", st)
	}
	d.MustCLI(t, "rm", always, stopped, failing)
}

// docker events with filters and since/until, through both CLIs.
func TestEventsFilters(t *testing.T) {
	d := shared
	since := strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10)
	id := remember(d.MustCLI(t, "run", "-d", "--name", "evts", "--label", "tier=web", "busybox", "sh", "-c", "exit 3"))
	waitFor(t, func() bool { return d.CLI("inspect", "-f", "{{.State.Status}}", id).Stdout == "exited\n" })
	d.MustCLI(t, "rm", id)
	until := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		r := cli("events", "--since", since, "--until", until, "--filter", "container=evts", "--format", "{{.Action}}")
		if r.Code != 0 || strings.Join(strings.Fields(r.Stdout), " ") != "create start die destroy" {
			t.Errorf("container events: %s", r)
		}
		r = cli("events", "--since", since, "--until", until, "--filter", "event=die", "--filter", "label=tier=web",
			"--format", "{{.Actor.Attributes.name}} {{.Actor.Attributes.exitCode}} {{.Actor.Attributes.image}}")
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "evts 3 busybox" {
			t.Errorf("die event: %s", r)
		}
		r = cli("events", "--since", since, "--until", until, "--filter", "type=volume")
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "" {
			t.Errorf("no volume events expected: %s", r)
		}
	})
}

// payloadCgroup is the container's own cgroup directory in a v1
// hierarchy (from its init's /proc/PID/cgroup); its parent holds the
// limits.
func payloadCgroup(t *testing.T, pid int, controller string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ","+controller+",") {
			for _, dir := range []string{parts[1], strings.Split(parts[1], ",")[0]} {
				p := filepath.Join("/sys/fs/cgroup", dir, parts[2])
				if _, err := os.Stat(p); err == nil {
					return p
				}
			}
		}
	}
	t.Fatalf("no %s cgroup for pid %d", controller, pid)
	return ""
}

// pause freezes the container (exec refused meanwhile); update sets the
// limits cgroup itself, which the container cannot raise; stats reads it.
func TestPauseUpdateStats(t *testing.T) {
	d := shared
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		r := cli("run", "-d", "busybox", "sleep", "1000")
		if r.Code != 0 {
			t.Fatal(r)
		}
		id := remember(r.Stdout)
		defer d.CLI("rm", "-f", id)
		pid, _ := strconv.Atoi(d.MustCLI(t, "inspect", "-f", "{{.State.Pid}}", id))

		if r := cli("pause", id); r.Code != 0 {
			t.Fatal(r)
		}
		if st := d.MustCLI(t, "inspect", "-f", "{{.State.Status}} {{.State.Paused}}", id); st != "paused true" {
			t.Errorf("after pause: %s", st)
		}
		if st := readTrim(t, filepath.Join(payloadCgroup(t, pid, "freezer"), "freezer.state")); st != "FROZEN" {
			t.Errorf("freezer.state %s", st)
		}
		if r := cli("exec", id, "true"); r.Code == 0 || !strings.Contains(r.Stderr, "is paused") {
			t.Errorf("exec in a paused container: %s", r)
		}
		if r := cli("unpause", id); r.Code != 0 {
			t.Fatal(r)
		}
		if st := readTrim(t, filepath.Join(payloadCgroup(t, pid, "freezer"), "freezer.state")); st != "THAWED" {
			t.Errorf("freezer.state after unpause %s", st)
		}

		if r := cli("update", "--memory", "64m", "--memory-swap", "128m", "--pids-limit", "42", "--cpu-shares", "512", id); r.Code != 0 {
			t.Fatal(r)
		}
		limits := filepath.Dir(payloadCgroup(t, pid, "memory"))
		if v := readTrim(t, filepath.Join(limits, "memory.limit_in_bytes")); v != strconv.Itoa(64<<20) {
			t.Errorf("limits cgroup memory.limit_in_bytes = %s", v)
		}
		if v := readTrim(t, filepath.Join(filepath.Dir(payloadCgroup(t, pid, "pids")), "pids.max")); v != "42" {
			t.Errorf("limits cgroup pids.max = %s", v)
		}
		if v := readTrim(t, filepath.Join(filepath.Dir(payloadCgroup(t, pid, "cpu")), "cpu.shares")); v != "512" {
			t.Errorf("limits cgroup cpu.shares = %s", v)
		}
		// The container sees its limit, and cannot raise it.
		if out := d.MustCLI(t, "exec", id, "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"); out != strconv.Itoa(64<<20) {
			t.Errorf("container's view of its limit: %s", out)
		}
		if r := d.CLI("exec", id, "sh", "-c", "echo -1 > /sys/fs/cgroup/memory/memory.limit_in_bytes"); r.Code == 0 {
			t.Errorf("the container raised its own limit: %s", r)
		}

		r = cli("stats", "--no-stream", "--format", "{{.PIDs}} {{.MemUsage}}", id)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "1 ") || !strings.Contains(r.Stdout, "/ 64MiB") {
			t.Errorf("stats: %s", r)
		}
		r = cli("top", id)
		if r.Code != 0 || !strings.Contains(r.Stdout, "sleep 1000") || !strings.Contains(r.Stdout, strconv.Itoa(pid)) {
			t.Errorf("top: %s", r)
		}
	})
}

// A health check turns the container healthy, then unhealthy, with its
// events and ps status.
func TestHealthStatus(t *testing.T) {
	d := shared
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		since := strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10)
		// The file appears after a while: starting first (the failures of
		// the start period do not count), then healthy; once healthy,
		// failures count, start period or not.
		r := cli("run", "-d", "--health-cmd", "test -f /tmp/ok", "--health-interval", "200ms", "--health-retries", "2", "--health-start-period", "60s",
			"busybox", "sh", "-c", "sleep 2; touch /tmp/ok; sleep 1000")
		if r.Code != 0 {
			t.Fatal(r)
		}
		id := remember(r.Stdout)
		defer d.CLI("rm", "-f", id)
		status := func() string {
			return strings.TrimSpace(d.CLI("inspect", "-f", "{{.State.Health.Status}}", id).Stdout)
		}
		if st := status(); st != "starting" {
			t.Errorf("health status at first: %q", st)
		}
		if ps := d.MustCLI(t, "ps", "--filter", "id="+id, "--format", "{{.Status}}"); !strings.HasSuffix(ps, "(health: starting)") {
			t.Errorf("ps status while starting: %q", ps)
		}
		waitFor(t, func() bool { return status() == "healthy" })
		if ps := d.MustCLI(t, "ps", "--filter", "id="+id, "--format", "{{.Status}}"); !strings.HasSuffix(ps, "(healthy)") {
			t.Errorf("ps status: %q", ps)
		}
		d.MustCLI(t, "exec", id, "rm", "/tmp/ok")
		waitFor(t, func() bool { return status() == "unhealthy" })
		// The log keeps the last five results, however many ran.
		waitFor(t, func() bool {
			n, _ := strconv.Atoi(strings.TrimSpace(d.CLI("inspect", "-f", "{{.State.Health.FailingStreak}}", id).Stdout))
			return n >= 6
		})
		if n := d.MustCLI(t, "inspect", "-f", "{{len .State.Health.Log}}", id); n != "5" {
			t.Errorf("health log keeps %s results", n)
		}
		until := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
		ev := cli("events", "--since", since, "--until", until, "--filter", "container="+id, "--filter", "event=health_status", "--format", "{{.Action}}")
		if got := strings.Join(strings.Fields(strings.ReplaceAll(ev.Stdout, ": ", ":")), " "); got != "health_status:healthy health_status:unhealthy" {
			t.Errorf("health events: %q (%s)", got, ev)
		}
	})
}

// container prune and system prune remove the stopped containers the
// filter selects, and nothing running; rename and diff on the way.
func TestPruneRenameDiff(t *testing.T) {
	d := shared
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		d.MustCLI(t, "run", "--label", "prunetest=1", "busybox", "sh", "-c", "mkdir /foo; echo x > /foo/bar; rm /bin/ls")
		stopped := remember(strings.TrimSpace(d.MustCLI(t, "ps", "-aq", "--no-trunc", "--filter", "label=prunetest=1")))
		running := remember(d.MustCLI(t, "run", "-d", "--label", "prunetest=1", "busybox", "sleep", "1000"))
		defer d.CLI("rm", "-f", running, stopped)
		if r := cli("diff", stopped); r.Code != 0 || r.Stdout != "C /bin\nD /bin/ls\nA /foo\nA /foo/bar\n" {
			t.Errorf("diff: %s", r)
		}
		if r := cli("rename", stopped, "prunetest-renamed"); r.Code != 0 {
			t.Fatal(r)
		}
		if n := d.MustCLI(t, "inspect", "-f", "{{.Name}}", stopped); n != "/prunetest-renamed" {
			t.Errorf("name after rename: %s", n)
		}
		r := cli("container", "prune", "-f", "--filter", "label=prunetest=1")
		if r.Code != 0 || !strings.Contains(r.Stdout, stopped) || strings.Contains(r.Stdout, running) {
			t.Errorf("container prune: %s", r)
		}
		if r := d.CLI("inspect", stopped); r.Code == 0 {
			t.Error("pruned container still there")
		}
		if st := d.MustCLI(t, "inspect", "-f", "{{.State.Status}}", running); st != "running" {
			t.Errorf("prune touched a running container: %s", st)
		}
	})
	// Our CLI's system prune: containers, and what else the engine has.
	id := remember(d.MustCLI(t, "create", "--label", "prunetest=2", "busybox"))
	if r := d.CLI("system", "prune", "-f", "--filter", "label=prunetest=2"); r.Code != 0 || !strings.Contains(r.Stdout, id) {
		t.Errorf("system prune: %s", r)
	}
}

// With a tty, the detach sequence (ctrl-p ctrl-q by default, or the
// client's) ends an attachment and leaves the container running with its
// stdin open; what came before it reaches the container.
func TestAttachDetachKeys(t *testing.T) {
	d := shared
	id := remember(d.MustCLI(t, "run", "-d", "-it", "busybox", "sh", "-c", "stty -echo; cat > /tmp/in"))
	defer d.CLI("rm", "-f", id)
	// Type only once the shell has set the terminal up and cat reads: the
	// redirection makes /tmp/in just before cat runs (run -d returns
	// earlier, which a loaded machine shows).
	waitInContainer(t, d, id, "test", "-e", "/tmp/in")
	cli := d.Client(t)
	defer cli.Close()
	for _, c := range []struct{ keys, input string }{{"", "hello\n\x10\x11"}, {"ctrl-x,y", "again\n\x18y"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		hj, err := cli.ContainerAttach(ctx, id, containertypes.AttachOptions{Stream: true, Stdin: true, Stdout: true, DetachKeys: c.keys})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if _, err := hj.Conn.Write([]byte(c.input)); err != nil {
			t.Fatal(err)
		}
		// The daemon ends the stream: reading reaches its end.
		_, err = io.Copy(io.Discard, hj.Reader)
		hj.Close()
		if ctx.Err() != nil {
			t.Fatalf("detach keys %q: the attachment did not end (%v)", c.keys, err)
		}
		cancel()
	}
	var got string
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(50 * time.Millisecond) {
		if got = d.CLI("exec", id, "cat", "/tmp/in").Stdout; got == "hello\nagain\n" {
			break
		}
	}
	if got != "hello\nagain\n" {
		t.Fatalf("the container read %q, want the input before each detach", got)
	}
	if st := d.MustCLI(t, "inspect", "-f", "{{.State.Status}}", id); st != "running" {
		t.Errorf("after detaching: %s", st)
	}
}

// stats --no-stream of several containers reads them concurrently: each
// non-streamed read waits a second for the daemon's second sample, so 8
// one after another would take 8 s. The rows keep the arguments' order.
func TestStatsNoStreamConcurrent(t *testing.T) {
	d := shared
	const n = 8
	var ids []string
	defer func() {
		if len(ids) > 0 {
			d.CLI(append([]string{"rm", "-f"}, ids...)...)
		}
	}()
	for i := 0; i < n; i++ {
		ids = append(ids, remember(d.MustCLI(t, "run", "-d", "--network", "none", "busybox", "sleep", "1000")))
	}
	t0 := time.Now()
	r := d.CLI(append([]string{"stats", "--no-stream", "--format", "{{.ID}}"}, ids...)...)
	took := time.Since(t0)
	if r.Code != 0 {
		t.Fatal(r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != n {
		t.Fatalf("%d rows, want %d: %s", len(lines), n, r)
	}
	for i, l := range lines {
		if !strings.HasPrefix(ids[i], l) {
			t.Errorf("row %d is %s, want %s", i, l, ids[i][:12])
		}
	}
	if took > 5*time.Second {
		t.Errorf("stats --no-stream of %d took %s: read one after another", n, took)
	}
}

// A container that keeps running across a kill -9 of the daemon keeps its
// health checks: its status goes on from the record (healthy stays
// healthy), and the checks run again (a failure makes it unhealthy).
func TestHealthAcrossDaemonRestart(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	id := remember(d.MustCLI(t, "run", "-d", "--network", "none", "--health-cmd", "test -f /tmp/ok", "--health-interval", "200ms", "--health-retries", "1",
		"busybox", "sh", "-c", "touch /tmp/ok; sleep 1000"))
	defer d.CLI("rm", "-f", id)
	status := func() string {
		return strings.TrimSpace(d.CLI("inspect", "-f", "{{.State.Health.Status}}", id).Stdout)
	}
	waitFor(t, func() bool { return status() == "healthy" })
	d.Kill(t)
	d.Start(t)
	if st := status(); st != "healthy" {
		t.Errorf("health status after the restart: %q, want healthy", st)
	}
	d.MustCLI(t, "exec", id, "rm", "/tmp/ok")
	waitFor(t, func() bool { return status() == "unhealthy" })
}
