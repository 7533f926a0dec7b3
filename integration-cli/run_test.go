//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunExitCodeAndStreams(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		r := cli("run", "--rm", "busybox", "sh", "-c", "echo hi; exit 3")
		if r.Code != 3 || r.Stdout != "hi\n" {
			t.Fatalf("want hi and exit 3, got %s", r)
		}
		r = cli("run", "--rm", "busybox", "sh", "-c", "echo out; echo err >&2")
		if r.Code != 0 || r.Stdout != "out\n" || r.Stderr != "err\n" {
			t.Fatalf("streams mixed: %s", r)
		}
	})
}

func TestRunOptions(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "env")
	os.WriteFile(envFile, []byte("# comment\nB=from-file\n"), 0o644)
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		r := cli("run", "--rm", "-e", "A=1", "--env-file", envFile, "-w", "/var/work", "-u", "nobody",
			"--hostname", "box", "busybox", "sh", "-c", `echo "$A $B"; pwd; id -u; hostname; cat /etc/hostname`)
		want := "1 from-file\n/var/work\n65534\nbox\nbox\n"
		if r.Code != 0 || r.Stdout != want {
			t.Fatalf("want %q, got %s", want, r)
		}
		r = cli("run", "--rm", "--entrypoint", "echo", "busybox", "via", "entrypoint")
		if r.Stdout != "via entrypoint\n" {
			t.Fatalf("entrypoint: %s", r)
		}
		r = cli("run", "--rm", "-u", "nosuchuser", "busybox", "true")
		if r.Code == 0 || !strings.Contains(r.Stderr, "nosuchuser") {
			t.Fatalf("unknown user accepted: %s", r)
		}
		r = cli("run", "--rm", "busybox", "/no/such/binary")
		if r.Code != 127 {
			t.Fatalf("missing binary: want 127, got %s", r)
		}
	})
}

func TestRunStdin(t *testing.T) {
	r := shared.CLIStdin("hello stdin\n", "run", "--rm", "-i", "busybox", "cat")
	if r.Code != 0 || r.Stdout != "hello stdin\n" {
		t.Fatalf("stdin: %s", r)
	}
	r = run(stockCLI, shared.Host(), "from stock\n", "run", "--rm", "-i", "busybox", "cat")
	if r.Code != 0 || r.Stdout != "from stock\n" {
		t.Fatalf("stdin through stock CLI: %s", r)
	}
}

func TestDetachedLifecycle(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		name := "life-" + strings.ReplaceAll(t.Name(), "/", "-")
		name = strings.ToLower(name)
		r := cli("run", "-d", "--name", name, "-l", "suite=it", "busybox", "sh", "-c",
			`trap 'echo bye; exit 0' TERM; echo started; while true; do sleep 0.1; done`)
		if r.Code != 0 || len(strings.TrimSpace(r.Stdout)) != 64 {
			t.Fatalf("run -d: %s", r)
		}
		id := remember(r.Stdout)
		waitFor(t, func() bool { return strings.Contains(cli("logs", name).Stdout, "started") })
		if out := cli("ps", "-q", "--no-trunc", "--filter", "name="+name).Stdout; strings.TrimSpace(out) != id {
			t.Fatalf("ps by name: %q", out)
		}
		if out := cli("ps", "--filter", "label=suite=it", "--format", "{{.Names}} {{.State}}").Stdout; !strings.Contains(out, name+" running") {
			t.Fatalf("ps by label: %q", out)
		}
		if out := cli("inspect", "--format", "{{.State.Status}} {{.Config.Labels.suite}}", name).Stdout; out != "running it\n" {
			t.Fatalf("inspect: %q", out)
		}
		start := time.Now()
		if r := cli("stop", name); r.Code != 0 {
			t.Fatalf("stop: %s", r)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("stop took %s: the TERM trap should end it at once", time.Since(start))
		}
		if out := cli("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name).Stdout; out != "exited 0\n" {
			t.Fatalf("after stop: %q", out)
		}
		if out := cli("logs", name).Stdout; out != "started\nbye\n" {
			t.Fatalf("logs: %q", out)
		}
		if out := cli("ps", "-a", "--filter", "status=exited", "--format", "{{.Names}}").Stdout; !strings.Contains(out, name) {
			t.Fatalf("ps status filter: %q", out)
		}
		if r := cli("rm", name); r.Code != 0 {
			t.Fatalf("rm: %s", r)
		}
		if r := cli("inspect", name); r.Code == 0 || !strings.Contains(r.Stderr, "No such") {
			t.Fatalf("inspect after rm: %s", r)
		}
	})
}

func TestStopTimeoutAndKill(t *testing.T) {
	id := remember(shared.MustCLI(t, "run", "-d", "--stop-timeout", "1", "busybox", "sleep", "1000"))
	start := time.Now()
	shared.MustCLI(t, "stop", id)
	if d := time.Since(start); d < 900*time.Millisecond || d > 6*time.Second {
		t.Errorf("stop with --stop-timeout 1 took %s", d)
	}
	if out := shared.MustCLI(t, "inspect", "--format", "{{.State.ExitCode}}", id); out != "137" {
		t.Errorf("SIGKILLed container exit code %s, want 137", out)
	}
	id2 := remember(shared.MustCLI(t, "run", "-d", "--stop-signal", "USR1", "busybox", "sh", "-c", `trap 'exit 7' USR1; echo ready; while true; do sleep 0.1; done`))
	waitReady(t, id2)
	shared.MustCLI(t, "stop", "-t", "10", id2)
	if out := shared.MustCLI(t, "inspect", "--format", "{{.State.ExitCode}}", id2); out != "7" {
		t.Errorf("--stop-signal USR1 not used: exit %s", out)
	}
	id3 := remember(shared.MustCLI(t, "run", "-d", "busybox", "sh", "-c", `trap 'exit 9' HUP; echo ready; while true; do sleep 0.1; done`))
	waitReady(t, id3)
	shared.MustCLI(t, "kill", "-s", "HUP", id3)
	if out := shared.MustCLI(t, "wait", id3); out != "9" {
		t.Errorf("kill -s HUP then wait: %s", out)
	}
	r := shared.CLI("kill", id3)
	if r.Code == 0 || !strings.Contains(r.Stderr, "not running") {
		t.Errorf("kill of a stopped container: %s", r)
	}
	shared.MustCLI(t, "rm", id, id2, id3)
}

func TestRmRunningAndNameConflict(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		name := strings.ToLower("dup-" + strings.ReplaceAll(t.Name(), "/", "-"))
		r := cli("run", "-d", "--name", name, "busybox", "sleep", "1000")
		remember(r.Stdout)
		r = cli("create", "--name", name, "busybox")
		if r.Code == 0 || !strings.Contains(r.Stderr, "is already in use") {
			t.Fatalf("duplicate name: %s", r)
		}
		r = cli("rm", name)
		if r.Code == 0 || !strings.Contains(r.Stderr, "container is running") {
			t.Fatalf("rm of running container: %s", r)
		}
		if r := cli("rm", "-f", name); r.Code != 0 {
			t.Fatalf("rm -f: %s", r)
		}
	})
}

func TestCreateStartAttachWait(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		id := remember(cli("create", "busybox", "sh", "-c", "echo from-start; exit 4").Stdout)
		if out := cli("ps", "-a", "--filter", "id="+id, "--format", "{{.State}}").Stdout; out != "created\n" {
			t.Fatalf("created state: %q", out)
		}
		r := cli("start", "-a", id)
		if r.Stdout != "from-start\n" || r.Code != 4 {
			t.Fatalf("start -a: %s", r)
		}
		if out := cli("wait", id).Stdout; out != "4\n" {
			t.Fatalf("wait: %q", out)
		}
		cli("rm", id)
	})
}

func TestRunRmRemoves(t *testing.T) {
	r := shared.CLI("run", "--rm", "--name", "gone-after", "busybox", "true")
	if r.Code != 0 {
		t.Fatal(r)
	}
	if r := shared.CLI("inspect", "gone-after"); r.Code == 0 {
		t.Fatalf("--rm left the container: %s", r)
	}
}

func TestLogsOptions(t *testing.T) {
	id := remember(shared.MustCLI(t, "run", "-d", "busybox", "sh", "-c", `for i in 1 2 3 4 5; do echo line$i; done; sleep 1; echo late; sleep 1000`))
	waitFor(t, func() bool { return strings.Contains(shared.CLI("logs", id).Stdout, "late") })
	if out := shared.CLI("logs", "--tail", "2", id).Stdout; out != "line5\nlate\n" {
		t.Errorf("--tail 2: %q", out)
	}
	out := shared.CLI("logs", "-t", id).Stdout
	first := strings.SplitN(out, "\n", 2)[0]
	ts, rest, _ := strings.Cut(first, " ")
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || rest != "line1" {
		t.Errorf("-t: %q", first)
	}
	// Docker prints nine digits of nanoseconds always, so the lines align.
	if len(ts) != len("2006-01-02T15:04:05.000000000Z") {
		t.Errorf("-t: timestamp %q is not nine-digit fixed width", ts)
	}
	lateTS := strings.Fields(strings.Split(out, "\n")[5])[0]
	if out := shared.CLI("logs", "--since", lateTS, id).Stdout; out != "late\n" {
		t.Errorf("--since %s: %q", lateTS, out)
	}
	// -f follows until the container stops.
	done := make(chan Result, 1)
	go func() { done <- shared.CLI("logs", "-f", id) }()
	time.Sleep(300 * time.Millisecond)
	shared.MustCLI(t, "stop", "-t", "0", id)
	select {
	case r := <-done:
		if !strings.HasSuffix(r.Stdout, "late\n") {
			t.Errorf("logs -f: %s", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("logs -f did not end when the container stopped")
	}
	// The json-file log is Docker's format, line for line.
	logPath := shared.MustCLI(t, "inspect", "--format", "{{.LogPath}}", id)
	b, err := os.ReadFile(logPath)
	if err != nil || !strings.HasPrefix(string(b), `{"log":"line1\n","stream":"stdout","time":"`) {
		t.Errorf("json-file content: %.200q %v", b, err)
	}
	shared.MustCLI(t, "rm", id)
}

func TestExec(t *testing.T) {
	id := remember(shared.MustCLI(t, "run", "-d", "-e", "CTR=1", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		r := cli("exec", "-e", "X=2", "-w", "/tmp", "-u", "nobody", id, "sh", "-c", `echo "$CTR$X"; pwd; id -u; exit 5`)
		if r.Code != 5 || r.Stdout != "12\n/tmp\n65534\n" {
			t.Fatalf("exec: %s", r)
		}
		r = cli("exec", id, "sh", "-c", "echo err >&2")
		if r.Stderr != "err\n" || r.Stdout != "" {
			t.Fatalf("exec streams: %s", r)
		}
		if r := cli("exec", "-d", id, "sh", "-c", "echo detached > /tmp/d"); r.Code != 0 {
			t.Fatalf("exec -d: %s", r)
		}
		waitFor(t, func() bool { return cli("exec", id, "cat", "/tmp/d").Stdout == "detached\n" })
		r = cli("exec", id, "/no/such")
		if r.Code != 127 && r.Code != 126 {
			t.Fatalf("exec of missing binary: %s", r)
		}
	})
	r := shared.CLIStdin("piped\n", "exec", "-i", id, "cat")
	if r.Stdout != "piped\n" {
		t.Fatalf("exec -i: %s", r)
	}
	stopped := remember(shared.MustCLI(t, "create", "busybox"))
	if r := shared.CLI("exec", stopped, "true"); r.Code == 0 || !strings.Contains(r.Stderr, "is not running") {
		t.Fatalf("exec in a stopped container: %s", r)
	}
	shared.CLI("rm", stopped)
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("condition not met within 15s")
}

// waitReady waits until a container whose script sets its traps first has
// printed "ready": a signal sent before that would be lost (PID 1 ignores
// signals it has no handler for).
func waitReady(t testing.TB, id string) {
	t.Helper()
	waitFor(t, func() bool { return strings.Contains(shared.CLI("logs", id).Stdout, "ready") })
}

// --init alone is Docker's: a reaper as PID 1 that runs the command.
func TestInitReaper(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		r := cli("run", "--rm", "--init", "busybox", "sh", "-c", `echo $$; tr '\0' ' ' < /proc/1/cmdline; exit 6`)
		if r.Code != 6 || strings.HasPrefix(r.Stdout, "1\n") || !strings.Contains(r.Stdout, "/sbin/docker-init -- sh") {
			t.Fatalf("--init: %s", r)
		}
	})
}

func TestAttach(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		id := remember(cli("run", "-d", "busybox", "sh", "-c", "sleep 1; echo late; echo late-err >&2; exit 5").Stdout)
		r := cli("attach", id)
		if r.Stdout != "late\n" || r.Stderr != "late-err\n" || r.Code != 5 {
			t.Fatalf("attach: %s", r)
		}
		cli("rm", id)
	})
}

func TestSaveLoadRoundTrip(t *testing.T) {
	f := filepath.Join(t.TempDir(), "busybox.tar")
	shared.MustCLI(t, "tag", "busybox", "it-save:rt")
	shared.MustCLI(t, "save", "-o", f, "it-save:rt")
	id := shared.MustCLI(t, "image", "inspect", "--format", "{{.Id}}", "it-save:rt")
	shared.MustCLI(t, "rmi", "it-save:rt")
	if r := shared.CLI("load", "-i", f); r.Code != 0 || !strings.Contains(r.Stdout, "it-save:rt") {
		t.Fatalf("load of a saved image: %s", r)
	}
	if got := shared.MustCLI(t, "image", "inspect", "--format", "{{.Id}}", "it-save:rt"); got != id {
		t.Fatalf("round trip changed the image ID: %s -> %s", id, got)
	}
	if out := shared.MustCLI(t, "run", "--rm", "it-save:rt", "echo", "saved"); out != "saved" {
		t.Fatalf("run of the loaded image: %q", out)
	}
	shared.MustCLI(t, "rmi", "it-save:rt")
}
