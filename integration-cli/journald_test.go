//go:build integration

package integrationcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
)

// The host has no journald (PID 1 is not systemd), so these tests run their
// daemon in a private mount namespace of its own: `unshare --mount` runs a
// small script that puts tmpfs on /run and /var/log/journal (the host's stay
// untouched), starts a real systemd-journald there (it binds
// /run/systemd/journal/socket itself), then execs dockerd, so the PID the
// harness knows is dockerd's. The daemon's socket and data root are under
// its /tmp directory, which the namespace shares with the host, so the CLI
// runs as usual; journalctl runs in the namespace through nsenter. After the
// daemon has stopped, journald is ended by its PID and the namespace goes
// with it.

const journaldNSScript = `set -e
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
if [ -d /var/log/journal ]; then mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /var/log/journal; fi
mkdir -p /run/systemd/journal
SYSTEMD_LOG_TARGET=console /lib/systemd/systemd-journald >"$JDIR/journald.log" 2>&1 &
echo $! >"$JDIR/journald.pid"
i=0
while [ ! -S /run/systemd/journal/socket ]; do
	i=$((i+1)); [ $i -lt 200 ] || { echo "journald did not come up" >&2; exit 1; }
	sleep 0.05
done
exec "$@"
`

// journalDaemon is a Daemon running next to its own journald.
type journalDaemon struct {
	*Daemon
	journaldPid int
}

// startWithJournald starts d as Start does, but inside the namespace.
func startWithJournald(t *testing.T, d *Daemon) *journalDaemon {
	t.Helper()
	testenv.RequireExecutable(t, "/lib/systemd/systemd-journald", "systemd")
	testenv.RequireExecutable(t, "journalctl", "systemd")
	lf, err := os.OpenFile(filepath.Join(d.Dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	d.logFile = lf
	args := append([]string{"--mount", "--propagation", "private", "sh", "-c", journaldNSScript, "sh", dockerd}, d.Args...)
	d.cmd = exec.Command("unshare", args...)
	d.cmd.Env = append(os.Environ(), "JDIR="+d.Dir)
	d.cmd.Stdout, d.cmd.Stderr = lf, lf
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	go d.cmd.Wait() //nolint:errcheck // reaped here; exit seen through ping
	jd := &journalDaemon{Daemon: d}
	t.Cleanup(func() {
		d.Cleanup(t)
		jd.stopJournald(t)
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if jd.journaldPid == 0 {
			b, _ := os.ReadFile(filepath.Join(d.Dir, "journald.pid"))
			jd.journaldPid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if out, err := exec.Command(ourCLI, "-H", d.Host(), "version", "--format", "{{.Server.Version}}").CombinedOutput(); err == nil && len(bytes.TrimSpace(out)) > 0 && jd.journaldPid != 0 {
			return jd
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("dockerd did not come up; log:\n%s", d.Log())
	return nil
}

// stopJournald ends journald by its PID (checking the PID still is it) and
// waits until it is gone, with it the last process of the namespace.
func (jd *journalDaemon) stopJournald(t *testing.T) {
	pid := jd.journaldPid
	if pid == 0 {
		return
	}
	isJournald := func() bool {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil {
			return false
		}
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return strings.HasPrefix(string(comm), "systemd-journal") && !strings.Contains(string(st), ") Z ")
	}
	if isJournald() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(5 * time.Second); isJournald(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("journald %d did not stop on SIGTERM", pid)
			break
		}
	}
}

// journal returns the entries journalctl (in the namespace) finds for
// match, waiting until there are at least want.
func (jd *journalDaemon) journal(t *testing.T, match string, want int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, err := exec.Command("nsenter", "--mount", "--target", strconv.Itoa(jd.journaldPid),
			"journalctl", "-o", "json", "--all", "--no-pager", match).Output()
		if err != nil {
			t.Fatalf("journalctl %s: %v", match, err)
		}
		out = out[:0]
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("journalctl line %q: %v", sc.Text(), err)
			}
			out = append(out, m)
		}
		if len(out) >= want || time.Now().After(deadline) {
			break
		}
	}
	if len(out) != want {
		t.Fatalf("journalctl %s: %d entries, want %d: %v", match, len(out), want, out)
	}
	return out
}

func TestJournaldLogDriver(t *testing.T) {
	d := NewDaemon(t)
	jd := startWithJournald(t, d)
	loadBusybox(t, d)

	// --log-driver on the command line, with the attribute options.
	id := remember(d.MustCLI(t, "run", "-d", "--name", "jd-run", "--log-driver=journald",
		"--label", "com.example.team=infra", "-e", "APP_MODE=test",
		"--log-opt", "labels=com.example.team", "--log-opt", "env-regex=^APP_", "--log-opt", "tag={{.Name}}/{{.ID}}",
		// The pause orders the lines: stdout and stderr are separate pipes.
		"busybox", "sh", "-c", "echo out; sleep 0.2; echo err >&2"))
	d.MustCLI(t, "wait", id)
	got := jd.journal(t, "CONTAINER_NAME=jd-run", 2)
	byPrio := map[any]map[string]any{}
	for _, e := range got {
		byPrio[e["PRIORITY"]] = e
	}
	if byPrio["6"]["MESSAGE"] != "out" || byPrio["3"]["MESSAGE"] != "err" {
		t.Fatalf("want out with priority 6 and err with 3, got %v", got)
	}
	want := map[string]string{
		"CONTAINER_ID": id[:12], "CONTAINER_ID_FULL": id, "CONTAINER_NAME": "jd-run",
		"CONTAINER_TAG": "jd-run/" + id[:12], "SYSLOG_IDENTIFIER": "jd-run/" + id[:12],
		"IMAGE_NAME": "busybox", "COM_EXAMPLE_TEAM": "infra", "APP_MODE": "test",
	}
	for _, e := range got {
		for k, v := range want {
			if e[k] != v {
				t.Errorf("%s = %v, want %q (entry %v)", k, e[k], v, e["MESSAGE"])
			}
		}
	}

	// docker logs reads them back, streams separated.
	r := d.CLI("logs", "jd-run")
	if r.Code != 0 || r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Fatalf("logs: %s", r)
	}
	r = d.CLI("logs", "--tail", "1", "jd-run")
	if r.Code != 0 || r.Stdout != "" || r.Stderr != "err\n" {
		t.Fatalf("logs --tail 1: %s", r)
	}
	r = d.CLI("logs", "-t", "jd-run")
	if f := strings.Fields(r.Stdout); r.Code != 0 || len(f) != 2 || f[1] != "out" {
		t.Fatalf("logs -t: %s", r)
	} else if ts, err := time.Parse(time.RFC3339Nano, f[0]); err != nil || time.Since(ts) > time.Minute {
		t.Fatalf("logs -t timestamp %q: %v", f[0], err)
	}
	r = d.Stock("logs", "jd-run")
	if r.Code != 0 || r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Fatalf("stock logs: %s", r)
	}

	// -f follows a running container until it exits, its last line included.
	fid := remember(d.MustCLI(t, "run", "-d", "--log-driver=journald", "busybox", "sh", "-c", "echo first; sleep 1; echo second"))
	start := time.Now()
	r = d.CLI("logs", "-f", fid)
	if r.Code != 0 || r.Stdout != "first\nsecond\n" {
		t.Fatalf("logs -f: %s", r)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("logs -f took %v after a 1s container", el)
	}

	// Options are checked when the container is created.
	r = d.CLI("run", "--rm", "--log-driver=journald", "--log-opt", "max-size=1m", "busybox", "true")
	if r.Code == 0 || !strings.Contains(r.Stderr, "max-size") {
		t.Fatalf("unknown log opt accepted: %s", r)
	}
}

// daemon.json's log-driver makes journald the default.
func TestJournaldDefaultFromDaemonJSON(t *testing.T) {
	d := NewDaemon(t)
	if err := os.WriteFile(filepath.Join(d.Dir, "daemon.json"), []byte(`{"log-driver":"journald"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jd := startWithJournald(t, d)
	loadBusybox(t, d)
	id := remember(d.MustCLI(t, "run", "-d", "--name", "jd-default", "busybox", "sh", "-c", "echo by default"))
	d.MustCLI(t, "wait", id)
	if typ := d.MustCLI(t, "inspect", "-f", "{{.HostConfig.LogConfig.Type}}", id); typ != "journald" {
		t.Fatalf("log driver %q, want journald", typ)
	}
	e := jd.journal(t, "CONTAINER_ID_FULL="+id, 1)[0]
	if e["MESSAGE"] != "by default" || e["PRIORITY"] != "6" || e["CONTAINER_NAME"] != "jd-default" {
		t.Fatalf("entry %v", e)
	}
	if r := d.CLI("logs", id); r.Code != 0 || r.Stdout != "by default\n" {
		t.Fatalf("logs: %s", r)
	}
}

// Without a journald socket the container does not start, as with Docker.
func TestJournaldMissingSocket(t *testing.T) {
	// A skip about the kind of host, not a missing component: where the
	// host's own journald listens, the log driver rightly finds it.
	if _, err := os.Stat("/run/systemd/journal/socket"); err == nil {
		t.Skip("the host has a journald")
	}
	r := shared.CLI("run", "--name", "jd-nosock", "--log-driver=journald", "busybox", "echo", "x")
	shared.CLI("rm", "-f", "jd-nosock")
	if r.Code == 0 || !strings.Contains(r.Stderr, "journald is not enabled") {
		t.Fatalf("started without journald: %s", r)
	}
}
