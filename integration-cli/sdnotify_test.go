//go:build integration

package integrationcli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
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
	if !strings.Contains(out, "0 STATUS=") || !strings.Contains(out, "READY=1") {
		t.Errorf("State.Health.Log: %q", out)
	}
	ev := shared.Stock("events", "--since", fmt.Sprint(since), "--until", fmt.Sprint(time.Now().Unix()+1),
		"--filter", "container="+id, "--format", "{{.Action}} {{index .Actor.Attributes \"READY\"}}").Stdout
	if !strings.Contains(ev, "health_status: healthy") || !strings.Contains(ev, "sdnotify 1") {
		t.Errorf("events:\n%s", ev)
	}
	shared.MustCLI(t, "stop", id)
	ev = shared.Stock("events", "--since", fmt.Sprint(since), "--until", fmt.Sprint(time.Now().Unix()+1),
		"--filter", "container="+id, "--filter", "event=sdnotify", "--format", "{{json .Actor.Attributes}}").Stdout
	t.Logf("what systemd told the engine:\n%s", ev)
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
	notify("RELOADING=1", "EXTEND_TIMEOUT_USEC=3000000")
	notify("STOPPING=1")
	ev := shared.Stock("events", "--since", fmt.Sprint(time.Now().Add(-time.Minute).Unix()), "--until", fmt.Sprint(time.Now().Unix()+1),
		"--filter", "container="+id, "--filter", "event=sdnotify", "--format", "{{json .Actor.Attributes}}").Stdout
	for _, want := range []string{`"RELOADING":"1"`, `"EXTEND_TIMEOUT_USEC":"3000000"`, `"STOPPING":"1"`, `"WATCHDOG_USEC":"1500000"`, `"STATUS":"serving"`} {
		if !strings.Contains(ev, want) {
			t.Errorf("no sdnotify event with %s:\n%s", want, ev)
		}
	}
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

// TestSdnotifyNotifyUnitInNestedHost runs contrib's docker-container@
// unit under a real systemd (a nested systemd host booted by the shared
// engine, running an engine of its own): the unit becomes active only
// once the container's systemd said READY=1, carries its STATUS=, stops
// cleanly with systemctl stop, and a CLI killed leaves no container.
func TestSdnotifyNotifyUnitInNestedHost(t *testing.T) {
	testenv.Require(t, !testing.Short(), "a run without -short (it builds and boots a systemd host)")
	var stderr strings.Builder
	cmd := exec.Command(repoRoot + "/hack/images/systemd-host.sh")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("systemd-host image: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(shared.MustCLI(t, "images", "--format", "{{.Repository}}"), systemdHostImage) {
		shared.MustCLI(t, "import", "-c", `CMD ["/sbin/init"]`, strings.TrimSpace(string(out)), systemdHostImage)
	}
	sdTar, err := exec.Command(repoRoot + "/hack/images/systemd.sh").Output()
	if err != nil {
		t.Fatal(err)
	}
	sdTarPath := strings.TrimSpace(string(sdTar))
	dir, err := os.MkdirTemp("/tmp", "itn-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(repoRoot, "contrib", "init", "systemd", "docker-container@.service")
	host := remember(shared.MustCLI(t, "run", "-d", "--privileged", "--init=systemd",
		"-v", filepath.Join(repoRoot, "bin")+":/sdengine/bin:ro",
		"-v", filepath.Join(repoRoot, "bin", "docker")+":/usr/bin/docker:ro",
		"-v", unit+":/etc/systemd/system/docker-container@.service:ro",
		"-v", sdTarPath+":/itn/systemd.tar:ro",
		"-v", dir+":/itn/state", systemdHostImage))
	defer func() {
		shared.CLI("exec", host, "systemctl", "stop", "docker-container@web.service", "docker-container@solo.service", "it-dockerd.service")
		if r := shared.CLI("rm", "-f", host); r.Code != 0 {
			t.Errorf("rm host: %s", r)
		}
	}()
	in := func(args ...string) Result { return shared.CLI(append([]string{"exec", host}, args...)...) }
	journal := func(unit string) string { return in("journalctl", "-u", unit, "--no-pager", "-n", "60").Stdout }
	mustIn := func(args ...string) string {
		t.Helper()
		r := in(args...)
		if r.Code != 0 {
			t.Fatalf("in host: %s: %s\nunit:\n%s\nengine:\n%s", strings.Join(args, " "), r,
				journal("docker-container@web"), journal("it-dockerd"))
		}
		return strings.TrimSpace(r.Stdout)
	}
	waitBooted(t, host)
	mustIn("systemd-run", "--unit=it-dockerd", "-p", "Delegate=yes", "-p", "KillMode=mixed",
		"/sdengine/bin/dockerd", "-H", "unix:///run/docker.sock", "--data-root", "/itn/state/root",
		"--exec-root", "/run/itd", "--pidfile", "/run/itd.pid", "--config-file", "/itn/state/daemon.json", "-D")
	for i := 0; in("docker", "version").Code != 0; i++ {
		if i > 200 {
			t.Fatalf("inner dockerd did not come up: %s", journal("it-dockerd"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustIn("docker", "import", "-c", `CMD ["/sbin/init"]`, "/itn/systemd.tar", systemdImage)
	// web: the example unit as it is, plus a watchdog long enough never
	// to fire (systemd 252 as PID 1 does not ping: docs/systemd.md).
	// solo: no --rm and no ExecStopPost, so that only the scope's tie to
	// the unit stops its container when the CLI is killed.
	mustIn("sh", "-c", "mkdir -p /etc/docker/containers /etc/systemd/system/docker-container@web.service.d /etc/systemd/system/docker-container@solo.service.d"+
		" && printf 'IMAGE=%s\\nRUN_OPTIONS=--init=systemd\\n' "+systemdImage+" | tee /etc/docker/containers/web.env > /etc/docker/containers/solo.env"+
		" && printf '[Service]\\nWatchdogSec=1h\\n' > /etc/systemd/system/docker-container@web.service.d/watchdog.conf"+
		" && printf '[Service]\\nExecStart=\\nExecStart=/usr/bin/docker run --name %%i --sdnotify=container $RUN_OPTIONS $IMAGE\\nExecStopPost=\\n'"+
		" > /etc/systemd/system/docker-container@solo.service.d/no-cleanup.conf && systemctl daemon-reload")

	// What the daemon refuses before anything runs: a name systemd would
	// not take (400 at create), a unit that is not running (at start:
	// BindsTo= would start it).
	if r := in("docker", "create", "--label", "io.sdengine.systemd.bind-to=web", systemdImage); r.Code == 0 || !strings.Contains(r.Stderr, "invalid systemd unit name") {
		t.Errorf("create bound to a bad unit name: %s", r)
	}
	idle := mustIn("docker", "create", "--label", "io.sdengine.systemd.bind-to=docker-container@idle.service", systemdImage)
	if r := in("docker", "start", idle); r.Code == 0 || !strings.Contains(r.Stderr, "the unit is inactive") {
		t.Errorf("start bound to an inactive unit: %s", r)
	}
	if st := in("systemctl", "is-active", "docker-container@idle.service").Stdout; strings.TrimSpace(st) != "inactive" {
		t.Errorf("the start bound to docker-container@idle started it: %s", st)
	}
	mustIn("docker", "rm", idle)

	// systemctl start returns once the unit is active: READY=1 relayed.
	start := time.Now()
	mustIn("systemctl", "start", "docker-container@web.service")
	t.Logf("systemctl start (boot to READY=1 in the container): %s", time.Since(start))
	if h := mustIn("docker", "inspect", "--format", "{{.State.Health.Status}}", "web"); h != "healthy" {
		t.Errorf("the unit is active but the container is %q", h)
	}
	show := mustIn("systemctl", "show", "-p", "ActiveState", "-p", "StatusText", "-p", "MainPID", "docker-container@web.service")
	t.Logf("%s", show)
	if !strings.Contains(show, "ActiveState=active") || !strings.Contains(show, "StatusText=Ready.") {
		t.Errorf("unit:\n%s", show)
	}
	mainPID := strings.TrimPrefix(lineWithPrefix(show, "MainPID="), "MainPID=")
	if cmdline := mustIn("sh", "-c", "tr '\\0' ' ' < /proc/"+mainPID+"/cmdline"); !strings.HasPrefix(cmdline, "/usr/bin/docker run") {
		t.Errorf("MainPID %s is %q, not the CLI", mainPID, cmdline)
	}
	// The unit's cgroup holds the CLI only: the container is the engine's.
	if procs := mustIn("sh", "-c", "systemd-cgls --no-pager -u docker-container@web.service | grep -c '[0-9] '"); procs != "1" {
		t.Errorf("processes in the unit's cgroup: %s\n%s", procs, in("systemd-cgls", "--no-pager", "-u", "docker-container@web.service").Stdout)
	}

	// The container's scope is bound to the unit, ordered before it (so
	// that the unit's own stop, the CLI's, comes first).
	id := mustIn("docker", "inspect", "--format", "{{.Id}}", "web")
	scope := mustIn("systemctl", "show", "-p", "BindsTo", "-p", "Before", "-p", "KillSignal", "-p", "TimeoutStopUSec", "docker-"+id+".scope")
	t.Logf("the container's scope: %s", strings.ReplaceAll(scope, "\n", "; "))
	for _, want := range []string{"BindsTo=docker-container@web.service", "KillSignal=9", "TimeoutStopUSec=10s"} {
		if !strings.Contains(scope, want+"\n") && !strings.HasSuffix(scope, want) {
			t.Errorf("the scope has no %s:\n%s", want, scope)
		}
	}
	if !strings.Contains(lineWithPrefix(scope, "Before="), "docker-container@web.service") {
		t.Errorf("the scope is not ordered before the unit:\n%s", scope)
	}
	// The unit's WatchdogSec= reaches the container's PID 1, without the
	// CLI's WATCHDOG_PID.
	env := mustIn("docker", "exec", "web", "sh", "-c", "tr '\\0' '\\n' < /proc/1/environ | grep ^WATCHDOG_ || true")
	if env != "WATCHDOG_USEC=3600000000" {
		t.Errorf("the container's watchdog variables: %q", env)
	}

	// systemctl stop: SIGTERM to the CLI, SIGRTMIN+3 to the container's
	// systemd, a clean halt, the unit inactive (not failed).
	start = time.Now()
	mustIn("systemctl", "stop", "docker-container@web.service")
	took := time.Since(start)
	t.Logf("systemctl stop (a clean halt; the bound scope's stop job waits for the unit's): %s", took)
	if took > 15*time.Second {
		t.Errorf("systemctl stop took %s", took)
	}
	if st := strings.TrimSpace(in("systemctl", "is-failed", "docker-container@web.service").Stdout); st == "failed" {
		t.Errorf("unit failed on stop:\n%s", journal("docker-container@web"))
	}
	if ids := mustIn("docker", "ps", "-aq"); ids != "" {
		t.Errorf("containers left after stop: %s", ids)
	}

	// A CLI killed outright: the unit's ExecStopPost removes the container.
	mustIn("systemctl", "start", "docker-container@web.service")
	mustIn("systemctl", "kill", "-s", "KILL", "--kill-whom=main", "docker-container@web.service")
	for i := 0; mustIn("docker", "ps", "-aq") != ""; i++ {
		if i > 300 {
			t.Fatalf("container left after the CLI was killed:\n%s", journal("docker-container@web"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A CLI killed outright in a unit without ExecStopPost: the unit goes
	// inactive, systemd stops the scope bound to it (SIGKILL, the systemd
	// profile's KillSignal), and the engine records the exit.
	mustIn("systemctl", "start", "docker-container@solo.service")
	start = time.Now()
	mustIn("systemctl", "kill", "-s", "KILL", "--kill-whom=main", "docker-container@solo.service")
	for i := 0; mustIn("docker", "inspect", "--format", "{{.State.Status}}", "solo") != "exited"; i++ {
		if i > 300 {
			t.Fatalf("container still running after the CLI was killed:\n%s\nengine:\n%s", journal("docker-container@solo"), journal("it-dockerd"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("container exited %s after the CLI was killed", time.Since(start))
	if ps := mustIn("docker", "ps", "-a", "--filter", "name=solo", "--format", "{{.Status}}"); !strings.HasPrefix(ps, "Exited (137)") {
		t.Errorf("docker ps -a: %q", ps)
	}
	mustIn("docker", "rm", "solo")
}

// lineWithPrefix is the line of s that starts with prefix.
func lineWithPrefix(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// With the cgroupfs driver there is no scope to bind: a container with
// io.sdengine.systemd.bind-to is created with a warning the CLI prints; a
// unit name systemd would refuse is a 400 with either driver.
func TestBindToUnitWithCgroupfs(t *testing.T) {
	d := shared
	if drv := shared.MustCLI(t, "info", "--format", "{{.CgroupDriver}}"); strings.TrimSpace(drv) != "cgroupfs" {
		d = NewDaemon(t, "--exec-opt", "native.cgroupdriver=cgroupfs")
		d.Start(t)
		defer d.Cleanup(t)
		loadBusybox(t, d)
	}
	r := d.CLI("create", "--label", "io.sdengine.systemd.bind-to=web.service", "busybox", "true")
	if r.Code != 0 || !strings.Contains(r.Stderr, "WARNING: io.sdengine.systemd.bind-to=web.service: the container is not tied to the unit: that needs the systemd cgroup driver") {
		t.Errorf("create: %s", r)
	}
	if id := strings.TrimSpace(r.Stdout); id != "" {
		remember(id)
		// It runs as any container: the label only warned.
		if s := d.CLI("start", "-a", id); s.Code != 0 {
			t.Errorf("start: %s", s)
		}
		d.MustCLI(t, "rm", id)
	}
	r = d.CLI("create", "--label", "io.sdengine.systemd.bind-to=web@.service", "busybox", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, `invalid systemd unit name "web@.service": a template, not an instance`) {
		t.Errorf("create with a template: %s", r)
	}
}
