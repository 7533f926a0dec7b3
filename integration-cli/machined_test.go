//go:build integration

package integrationcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
	"github.com/sdengine/engine/pkg/systemd"
)

// RegisterMachine end to end (brief 3.4), against a real systemd-machined.

const machinedBin = "/lib/systemd/systemd-machined"

// nsDockerd is a wrapper that runs dockerd in a private mount namespace
// with a tmpfs /run holding a real system bus and systemd-machined, and
// /run/systemd/system, so the daemon sees a systemd host (Booted) whose
// machined answers. Stopping the wrapper stops dockerd, then the bus.
const nsDockerd = `#!/bin/bash
set -e
if [ -z "$IT_MACHINED_NS" ]; then
	IT_MACHINED_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
mkdir -p /run/dbus /run/systemd/system
dbus-daemon --system --fork --nopidfile --print-pid=3 3>"%[1]s/dbus.pid"
%[2]s >"%[1]s/machined.log" 2>&1 &
machined=$!
for i in $(seq 100); do busctl status org.freedesktop.machine1 >/dev/null 2>&1 && break; sleep 0.05; done
%[3]s "$@" &
daemon=$!
trap 'kill -TERM $daemon' TERM INT
set +e
while kill -0 $daemon 2>/dev/null; do wait $daemon; done
kill $machined; wait $machined
kill "$(cat "%[1]s/dbus.pid")"
`

// startInMachinedNS starts d through nsDockerd.
func startInMachinedNS(t *testing.T, d *Daemon) {
	t.Helper()
	for _, need := range []struct{ prog, pkg string }{
		{machinedBin, "systemd-container"},
		{"machinectl", "systemd-container"},
		{"dbus-daemon", "dbus"},
		{"busctl", "systemd"},
	} {
		testenv.RequireExecutable(t, need.prog, need.pkg)
	}
	script := filepath.Join(d.Dir, "dockerd-ns.sh")
	body := fmt.Sprintf(nsDockerd, d.Dir, machinedBin, dockerd)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	// Start runs the package's dockerd path; point it at the wrapper for
	// this one start (the integration tests do not run in parallel).
	real := dockerd
	dockerd = script
	defer func() { dockerd = real }()
	d.Start(t)
}

// machinectlIn runs machinectl in the daemon's mount namespace.
func machinectlIn(d *Daemon, args ...string) (string, error) {
	args = append([]string{"-t", fmt.Sprint(d.Pid()), "-m", "machinectl", "--no-pager", "--no-legend"}, args...)
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	return string(out), err
}

func machineListed(t *testing.T, d *Daemon, name string) bool {
	t.Helper()
	out, err := machinectlIn(d, "list")
	if err != nil {
		t.Fatalf("machinectl list: %v: %s", err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}

func waitMachine(t *testing.T, d *Daemon, name string, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if machineListed(t, d, name) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ := machinectlIn(d, "list")
	t.Fatalf("machine %s listed=%v expected; machinectl list:\n%s\ndaemon log:\n%s", name, !want, out, d.Log())
}

// mustStock runs the stock CLI (ours has no --cgroup-parent yet).
func mustStock(t *testing.T, d *Daemon, args ...string) string {
	t.Helper()
	r := d.Stock(args...)
	if r.Code != 0 {
		t.Fatalf("docker %s: %s", strings.Join(args, " "), r)
	}
	return strings.TrimSpace(r.Stdout)
}

// removeCgroupDirs removes the cgroup parents the cgroupfs driver made
// for --cgroup-parent (it removes only the container's own leaf).
// machinedScope is this suite's cgroup parent for containers registered
// with machined: a suite beside this one has its own.
var machinedScope = fmt.Sprintf("it-machined-%d.scope", os.Getpid())

// removeCgroupDirs removes the cgroup directories rel (relative to each
// hierarchy), in order. machine.slice is a parent shared with other suites
// and the host's machines: it is left while it has child cgroups.
func removeCgroupDirs(t *testing.T, rel ...string) {
	for _, r := range rel {
		sharedParent := filepath.Base(r) == "machine.slice"
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + r)
		if _, err := os.Stat("/sys/fs/cgroup/" + r); err == nil {
			dirs = append(dirs, "/sys/fs/cgroup/"+r)
		}
		for _, d := range dirs {
			if sharedParent && hasChildCgroup(d) {
				continue
			}
			// The kernel may still be freeing a child that was just
			// removed: EBUSY for a moment, then gone.
			var err error
			for i := 0; i < 50; i++ {
				if err = os.Remove(d); err == nil || os.IsNotExist(err) || !errors.Is(err, syscall.EBUSY) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil && !os.IsNotExist(err) && !(sharedParent && hasChildCgroup(d)) {
				t.Errorf("cgroup left behind: %s: %v", d, err)
			}
		}
	}
}

// hasChildCgroup tells whether the cgroup directory dir has a child cgroup.
func hasChildCgroup(dir string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			return true
		}
	}
	return false
}

// TestMachinedStandalone: a started container is registered with the
// right name, id, class, service, leader and root, and unregistered when
// it stops. machined wants the leader in a unit's cgroup; with no systemd1
// here the systemd cgroup driver cannot work, so the container gets the
// cgroupfs driver and a *.scope cgroup parent.
func TestMachinedStandalone(t *testing.T) {
	d := NewDaemon(t, "--exec-opt", "native.cgroupdriver=cgroupfs")
	startInMachinedNS(t, d)
	defer removeCgroupDirs(t, "machine.slice/"+machinedScope, "machine.slice")
	defer d.Cleanup(t)
	loadBusybox(t, d)
	if drv := d.MustCLI(t, "info", "--format", "{{.CgroupDriver}}"); drv != "cgroupfs" {
		t.Errorf("CgroupDriver %q with native.cgroupdriver=cgroupfs", drv)
	}

	long := strings.Repeat("l", 70)
	for _, tc := range []struct{ name, machine string }{
		{long, long[:64]},      // truncated, no panic
		{"web_app", "web-app"}, // '_' is refused by machined: mapped
		{"short", "short"},
	} {
		id := remember(mustStock(t, d, "run", "-d", "--name", tc.name,
			"--cgroup-parent", "machine.slice/"+machinedScope, "busybox", "sleep", "60"))
		waitMachine(t, d, tc.machine, true)
		pid := d.MustCLI(t, "inspect", "--format", "{{.State.Pid}}", id)
		show, err := machinectlIn(d, "show", tc.machine, "-p", "Id", "-p", "Class", "-p", "Service", "-p", "Leader", "-p", "RootDirectory", "-p", "Unit")
		if err != nil {
			t.Fatalf("machinectl show: %v: %s", err, show)
		}
		for _, want := range []string{
			"Id=" + id[:32], "Class=container", "Service=docker", "Leader=" + pid, "Unit=" + machinedScope,
		} {
			if !strings.Contains(show, want+"\n") {
				t.Errorf("%s: machinectl show lacks %q:\n%s", tc.name, want, show)
			}
		}
		if !strings.Contains(show, "RootDirectory="+d.Root) || !strings.Contains(show, "/merged\n") {
			t.Errorf("%s: root directory is not the container's rootfs:\n%s", tc.name, show)
		}
		d.MustCLI(t, "rm", "-f", id)
		waitMachine(t, d, tc.machine, false)
	}
	// A container that exits by itself is unregistered too.
	id := remember(mustStock(t, d, "run", "-d", "--name", "quick", "--cgroup-parent", "machine.slice/"+machinedScope, "busybox", "sh", "-c", "sleep 1"))
	waitMachine(t, d, "quick", true)
	d.MustCLI(t, "wait", id)
	waitMachine(t, d, "quick", false)
	d.MustCLI(t, "rm", id)

	// machined in this namespace believes the host runs systemd, so
	// without an exec-opt the driver defaults to systemd.
	if strings.Contains(d.Log(), "level=WARN msg=\"RegisterMachine failed") {
		t.Errorf("registration failures in the log:\n%s", d.Log())
	}
}

// TestNoMachinedWithoutSystemd: on a host that does not run systemd no
// registration is attempted and the cgroupfs driver is the default.
func TestNoMachinedWithoutSystemd(t *testing.T) {
	// A skip about the kind of host, not a missing component: on a host
	// that runs systemd the shared daemon rightly registers its containers,
	// so there is nothing to check here (TestMachinedNestedSystemdHost
	// covers that case).
	if systemd.Booted() {
		t.Skip("the host runs systemd")
	}
	if drv := shared.MustCLI(t, "info", "--format", "{{.CgroupDriver}}"); drv != "cgroupfs" {
		t.Errorf("CgroupDriver %q on a host without systemd", drv)
	}
	id := remember(shared.MustCLI(t, "run", "-d", "busybox", "sleep", "30"))
	shared.MustCLI(t, "rm", "-f", id)
	if log := shared.Log(); strings.Contains(log, "RegisterMachine") || strings.Contains(log, "UnregisterMachine") {
		t.Errorf("machined was called on a host without systemd:\n%s", log)
	}
}

const systemdHostImage = "it-systemd-host"

// nestedHost is a Debian "systemd host" booted by our engine with
// --init=systemd (privileged), running a second engine as a Delegate=yes
// unit (it-dockerd.service, on /run/itd.sock) with busybox loaded. The
// tree's bin/ is at /sdengine/bin, Dir at /itm.
type nestedHost struct {
	t   *testing.T
	ID  string // the host container, in the shared daemon
	Dir string
}

// startNestedHost boots the host and its engine; both go at cleanup.
// runArgs are more options for the host's docker run.
func startNestedHost(t *testing.T, runArgs ...string) *nestedHost {
	t.Helper()
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
	dir, err := os.MkdirTemp("/tmp", "itm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	copyFile(t, busyboxTar, filepath.Join(dir, "busybox.tar"))
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	h := &nestedHost{t: t, Dir: dir}
	// --privileged gives the host the machine's devices, /dev/tty0 and
	// /dev/tty1 too, so the image's getty@tty1.service (enabled, on the
	// condition that /dev/tty0 exists) would run agetty on this machine's
	// first VT: a host resource. Two suites side by side then each start
	// one there, each vhangup() kills the other's, and the unit fails
	// (start-limit-hit): masked, as a bind of /dev/null over its unit.
	run := append([]string{"run", "-d", "--privileged", "--init=systemd",
		"-v", "/dev/null:/etc/systemd/system/getty@tty1.service:ro",
		"-v", filepath.Join(repoRoot, "bin") + ":/sdengine/bin:ro", "-v", dir + ":/itm"}, runArgs...)
	h.ID = remember(shared.MustCLI(t, append(run, systemdHostImage)...))
	t.Cleanup(func() {
		// Halting the host stops everything inside it, the inner engine
		// and its containers included; their mounts live and die in the
		// host's mount namespace.
		shared.CLI("exec", h.ID, "systemctl", "stop", "it-dockerd.service")
		if r := shared.CLI("rm", "-f", h.ID); r.Code != 0 {
			t.Errorf("rm host: %s", r)
		}
	})
	waitBooted(t, h.ID)

	h.MustIn("systemd-run", "--unit=it-dockerd", "-p", "Delegate=yes", "-p", "KillMode=mixed",
		"/sdengine/bin/dockerd", "-H", "unix:///run/itd.sock", "--data-root", "/itm/root",
		"--exec-root", "/run/itd", "--pidfile", "/run/itd.pid", "--config-file", "/itm/daemon.json", "-D")
	for i := 0; h.Inner("version").Code != 0; i++ {
		if i > 200 {
			t.Fatalf("inner dockerd did not come up: %s", h.In("journalctl", "-u", "it-dockerd", "--no-pager").Stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		if ids := strings.Fields(h.Inner("ps", "-aq").Stdout); len(ids) > 0 {
			h.Inner(append([]string{"rm", "-f"}, ids...)...)
		}
	})
	h.MustInner("import", "-c", `CMD ["sh"]`, "/itm/busybox.tar", "busybox")
	return h
}

// In runs a command in the host.
func (h *nestedHost) In(args ...string) Result {
	return shared.CLI(append([]string{"exec", h.ID}, args...)...)
}

// MustIn runs a command in the host and fails the test unless it exits 0.
func (h *nestedHost) MustIn(args ...string) string {
	h.t.Helper()
	r := h.In(args...)
	if r.Code != 0 {
		h.t.Fatalf("in host: %s: %s\nhost log:\n%s", strings.Join(args, " "), r, shared.CLI("logs", h.ID).Stdout)
	}
	return strings.TrimSpace(r.Stdout)
}

// Inner runs our CLI in the host against the inner engine.
func (h *nestedHost) Inner(args ...string) Result {
	return h.In(append([]string{"/sdengine/bin/docker", "-H", "unix:///run/itd.sock"}, args...)...)
}

// MustInner is Inner that fails the test unless it exits 0.
func (h *nestedHost) MustInner(args ...string) string {
	h.t.Helper()
	r := h.Inner(args...)
	if r.Code != 0 {
		h.t.Fatalf("inner docker %s: %s\ninner log:\n%s", strings.Join(args, " "), r,
			h.In("journalctl", "-u", "it-dockerd", "--no-pager").Stdout)
	}
	return strings.TrimSpace(r.Stdout)
}

// TestMachinedNestedSystemdHost is the full path (notes 4a): a Debian
// "systemd host" booted by our engine with --init=systemd; a second engine
// inside it, as a Delegate=yes unit, picks the systemd cgroup driver
// (the host runs systemd), puts its container in machine.slice as
// docker-<id>.scope and registers it; machined lists it while it runs and
// not after it stops.
func TestMachinedNestedSystemdHost(t *testing.T) {
	h := startNestedHost(t)
	in, mustIn, inner, mustInner := h.In, h.MustIn, h.Inner, h.MustInner
	if drv := mustInner("info", "--format", "{{.CgroupDriver}}"); drv != "systemd" {
		t.Errorf("inner CgroupDriver %q on a systemd host", drv)
	}

	id := mustInner("run", "-d", "--name", "inner_web", "busybox", "sleep", "60")
	listed := func() bool {
		for _, l := range strings.Split(mustIn("machinectl", "list", "--no-legend", "--no-pager"), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "inner-web" {
				return true
			}
		}
		return false
	}
	waitUntil := func(want bool) {
		t.Helper()
		for i := 0; listed() != want; i++ {
			if i > 200 {
				t.Fatalf("machine inner-web listed=%v, want %v\n%s", !want, want,
					in("journalctl", "-u", "it-dockerd", "--no-pager").Stdout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil(true)
	show := mustIn("machinectl", "show", "inner-web", "-p", "Id", "-p", "Class", "-p", "Unit", "-p", "Leader")
	t.Logf("machinectl show inner-web:\n%s", show)
	pid := mustInner("inspect", "--format", "{{.State.Pid}}", id)
	for _, want := range []string{"Id=" + id[:32], "Class=container", "Unit=docker-" + id + ".scope", "Leader=" + pid} {
		if !strings.Contains(show+"\n", want+"\n") {
			t.Errorf("machinectl show lacks %q:\n%s", want, show)
		}
	}
	// Its processes are in a Delegate=yes scope, in every hierarchy, below
	// the slice that holds its limits.
	scope := "/machine.slice/machine-docker.slice/machine-docker-" + id + ".slice/docker-" + id + ".scope"
	for _, l := range strings.Split(mustIn("cat", "/proc/"+pid+"/cgroup"), "\n") {
		if !strings.HasSuffix(l, ":"+scope) {
			t.Errorf("container not in its scope under its limits slice: %s", l)
		}
	}
	if d := mustIn("systemctl", "show", "-P", "Delegate", "docker-"+id+".scope"); d != "yes" {
		t.Errorf("scope Delegate=%s", d)
	}
	limited := mustInner("run", "-d", "--pids-limit", "50", "-m", "64m", "busybox", "sleep", "60")
	slice := "machine-docker-" + limited + ".slice"
	if tasks := mustIn("systemctl", "show", "-P", "TasksMax", slice); tasks != "50" {
		t.Errorf("%s TasksMax=%s, want 50", slice, tasks)
	}
	if r := inner("exec", limited, "sh", "-c", "echo 1000 > /sys/fs/cgroup/pids/pids.max"); r.Code == 0 {
		t.Errorf("root in the container raised its pids limit")
	}
	if max := mustIn("cat", "/sys/fs/cgroup/pids/machine.slice/machine-docker.slice/"+slice+"/pids.max"); max != "50" {
		t.Errorf("pids.max of the limits slice: %s", max)
	}
	mustInner("rm", "-f", limited)
	if st := mustIn("systemctl", "show", "-P", "ActiveState", slice); st == "active" {
		t.Errorf("limits slice still active after rm")
	}
	mustInner("stop", "-t", "1", id)
	waitUntil(false)
	if st := mustIn("systemctl", "show", "-P", "ActiveState", "docker-"+id+".scope"); st == "active" {
		t.Errorf("scope still active after stop")
	}
	mustInner("rm", id)
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMachinedNetwork: a container on the bridge is registered with its
// network interface (RegisterMachineWithNetwork, the host's end of its
// veth), so that machinectl status shows the interface and the
// container's address.
func TestMachinedNetwork(t *testing.T) {
	n := claimBridgeNumber(t)
	bridge := fmt.Sprintf("sdit%d", n)
	d := NewDaemon(t, "--exec-opt", "native.cgroupdriver=cgroupfs",
		"--bridge", bridge, "--bip", fmt.Sprintf("10.213.%d.1/24", n), "--ip-forward=false")
	startInMachinedNS(t, d)
	defer removeCgroupDirs(t, "machine.slice/"+machinedScope, "machine.slice")
	defer d.Cleanup(t)
	loadBusybox(t, d)
	id := remember(mustStock(t, d, "run", "-d", "--name", "netm",
		"--cgroup-parent", "machine.slice/"+machinedScope, "busybox", "sleep", "60"))
	waitMachine(t, d, "netm", true)
	ip := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", id))
	status, err := machinectlIn(d, "status", "netm")
	if err != nil {
		t.Fatalf("machinectl status: %v: %s", err, status)
	}
	if !strings.Contains(status, "Address: "+ip) {
		t.Errorf("machinectl status does not show the address %s:\n%s", ip, status)
	}
	if !strings.Contains(status, "Iface: veth"+id[:11]) {
		t.Errorf("machinectl status does not show the interface veth%s:\n%s", id[:11], status)
	}
	d.MustCLI(t, "rm", "-f", id)
	waitMachine(t, d, "netm", false)
	d.Stop(t)
	checkNoNetworkLeft(t, d, bridge, id)
}
