//go:build integration

package integrationcli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// notifyPerl sends its arguments, joined by newlines, to /run/host/notify
// (an exec has the container's environment, not PID 1's $NOTIFY_SOCKET)
// from a process that stays alive a second after sending: the daemon
// checks the sender's cgroup, which a process already gone no longer has
// (systemd-notify has the same race with systemd's NotifyAccess=all).
const notifyPerl = `use Socket; socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die "socket: $!"; ` +
	`send($s, join("\n", @ARGV), 0, pack_sockaddr_un("/run/host/notify")) or die "send: $!"; sleep 1;`

// waitHealth polls the health status until want, within 60 s.
func waitHealth(t *testing.T, cli func(args ...string) Result, id, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		got = strings.TrimSpace(cli("inspect", "--format", "{{if .State.Health}}{{.State.Health.Status}}{{end}}", id).Stdout)
		if got == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("health %q, want %q; log:\n%s", got, want, cli("inspect", "--format", "{{json .State.Health}}", id).Stdout)
}

// A systemd container started by the stock CLI becomes healthy when its
// systemd says READY=1: docker ps shows (healthy), health_status and
// sdnotify events fire, and inspect shows the STATUS= text.
func TestSdnotifySystemdReadyIsHealthy(t *testing.T) {
	needSystemdImage(t)
	since := time.Now().Add(-time.Second).Unix()
	r := shared.Stock("run", "-d", systemdImage, "/sbin/init")
	if r.Code != 0 {
		t.Fatal(r)
	}
	id := remember(r.Stdout)
	defer shared.CLI("rm", "-f", id)
	env := shared.MustCLI(t, "exec", id, "sh", "-c", "tr '\\0' '\\n' < /proc/1/environ")
	if !strings.Contains(env, "NOTIFY_SOCKET=/run/host/notify\n") {
		t.Errorf("PID 1 has no NOTIFY_SOCKET=/run/host/notify:\n%s", env)
	}
	if out := shared.MustCLI(t, "exec", id, "stat", "-c", "%F %a", "/run/host/notify"); out != "socket 666" {
		t.Errorf("/run/host/notify: %s", out)
	}
	if r := shared.CLI("exec", id, "touch", "/run/host/x"); r.Code == 0 {
		t.Errorf("/run/host is writable")
	}
	waitHealth(t, shared.Stock, id, "healthy")
	if ps := shared.Stock("ps", "--filter", "id="+id, "--format", "{{.Status}}").Stdout; !strings.Contains(ps, "(healthy)") {
		t.Errorf("docker ps: %q", ps)
	}
	out := shared.MustCLI(t, "inspect", "--format", "{{range .State.Health.Log}}{{.ExitCode}} {{.Output}}|{{end}}", id)
	if !strings.Contains(out, "0 STATUS=Startup finished") || !strings.Contains(out, "READY=1") {
		t.Errorf("State.Health.Log: %q", out)
	}
	ev := shared.Stock("events", "--since", fmt.Sprint(since), "--until", fmt.Sprint(time.Now().Unix()+1),
		"--filter", "container="+id, "--format", "{{.Action}} {{index .Actor.Attributes \"READY\"}}").Stdout
	if !strings.Contains(ev, "health_status: healthy") || !strings.Contains(ev, "sdnotify 1") {
		t.Errorf("events:\n%s", ev)
	}
	// The systemd in the container is what stops it: STOPPING=1 on the way.
	shared.MustCLI(t, "stop", id)
	ev = shared.Stock("events", "--since", fmt.Sprint(since), "--until", fmt.Sprint(time.Now().Unix()+1),
		"--filter", "container="+id, "--filter", "event=sdnotify", "--format", "{{index .Actor.Attributes \"STOPPING\"}}").Stdout
	if !strings.Contains(ev, "1") {
		t.Errorf("no STOPPING=1 event:\n%s", ev)
	}
}

// Any container may ask for a socket with the label; garbage, a forged
// MAINPID= and a flood change nothing but its own state, and the watchdog
// makes it unhealthy when the pings stop.
func TestSdnotifyLabelWatchdogAndBadInput(t *testing.T) {
	needSystemdImage(t)
	r := shared.Stock("run", "-d", "--label", "io.sdengine.sdnotify=true", systemdImage, "sleep", "600")
	if r.Code != 0 {
		t.Fatal(r)
	}
	id := remember(r.Stdout)
	defer shared.CLI("rm", "-f", id)
	notify := func(lines ...string) {
		t.Helper()
		shared.MustCLI(t, append([]string{"exec", id, "perl", "-e", notifyPerl}, lines...)...)
	}
	waitHealth(t, shared.CLI, id, "starting")
	// Garbage and an oversized message: nothing changes.
	notify("garbage")
	notify("STATUS=" + strings.Repeat("x", 5000))
	notify("READY=1", "MAINPID=1")
	waitHealth(t, shared.CLI, id, "healthy")
	out := shared.MustCLI(t, "inspect", "--format", "{{range .State.Health.Log}}{{.Output}}|{{end}}", id)
	if strings.Contains(out, "xxxx") || strings.Contains(out, "garbage") || strings.Contains(out, "MAINPID") {
		t.Errorf("bad input recorded: %q", out)
	}
	notify("STATUS=serving", "WATCHDOG_USEC=1500000")
	waitHealth(t, shared.CLI, id, "unhealthy")
	out = shared.MustCLI(t, "inspect", "--format", "{{range .State.Health.Log}}{{.ExitCode}} {{.Output}}|{{end}}", id)
	if !strings.Contains(out, "1 watchdog timeout") || !strings.Contains(out, "STATUS=serving") {
		t.Errorf("State.Health.Log: %q", out)
	}
	notify("WATCHDOG=1")
	waitHealth(t, shared.CLI, id, "healthy")
	// A flood from the container: the daemon stays responsive.
	start := time.Now()
	shared.MustCLI(t, "exec", id, "perl", "-e", `use Socket; socket(my $s, PF_UNIX, SOCK_DGRAM, 0); `+
		`for (1..20000) { send($s, "STATUS=flood $_", 0, pack_sockaddr_un("/run/host/notify")) }`)
	shared.MustCLI(t, "inspect", id)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("flood and inspect took %s", took)
	}
	n := strings.Count(shared.Stock("events", "--since", fmt.Sprint(start.Unix()), "--until", fmt.Sprint(time.Now().Unix()+1),
		"--filter", "container="+id, "--filter", "event=sdnotify").Stdout, "\n")
	if n > 200 {
		t.Errorf("%d sdnotify events from a flood of 20000", n)
	}
}

// The socket outlives the daemon: a restarted daemon makes it again in
// the directory the container keeps bound, and hears the container.
func TestSdnotifyAcrossDaemonRestart(t *testing.T) {
	needSystemdImage(t)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	tarball, err := exec.Command(repoRoot + "/hack/images/systemd.sh").Output()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(strings.TrimSpace(string(tarball)))
	if err != nil {
		t.Fatal(err)
	}
	imp := exec.Command(ourCLI, "-H", d.Host(), "import", "-c", `CMD ["/sbin/init"]`, "-", systemdImage)
	imp.Stdin = f
	if b, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v %s", err, b)
	}
	f.Close()
	id := strings.TrimSpace(d.MustCLI(t, "run", "-d", "--label", "io.sdengine.sdnotify=true", systemdImage, "sleep", "600"))
	waitHealth(t, d.CLI, id, "starting")
	d.Kill(t)
	d.Start(t)
	waitHealth(t, d.CLI, id, "starting")
	d.MustCLI(t, "exec", id, "perl", "-e", notifyPerl, "READY=1", "STATUS=after the restart")
	waitHealth(t, d.CLI, id, "healthy")
	if out := d.MustCLI(t, "inspect", "--format", "{{range .State.Health.Log}}{{.Output}}|{{end}}", id); !strings.Contains(out, "after the restart") {
		t.Errorf("State.Health.Log: %q", out)
	}
}
