//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shmMounts lists the host's mounts of the shareable /dev/shm of
// container id (its mountinfo lines).
func shmMounts(t *testing.T, d *Daemon, id string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d.Root, "containers", id, "mounts", "shm")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == p {
			out = append(out, l)
		}
	}
	return out
}

// nsOf is a namespace of the host (this test's process).
func nsOf(t *testing.T, kind string) string {
	t.Helper()
	l, err := os.Readlink("/proc/self/ns/" + kind)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestIpcShareableAndContainer: a shareable container's /dev/shm is a tmpfs
// mounted on the host under its directory, a container started with --ipc
// container:X shares X's IPC namespace and /dev/shm, joining a private or
// stopped container is refused at start, and nothing stays mounted once
// the donor stops or is removed.
func TestIpcShareableAndContainer(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		must := func(args ...string) string {
			t.Helper()
			r := cli(args...)
			if r.Code != 0 {
				t.Fatalf("docker %s: %s", strings.Join(args, " "), r)
			}
			return strings.TrimSpace(r.Stdout)
		}
		donor := remember(must("run", "-d", "--ipc", "shareable", "--shm-size", "2m", "busybox", "top"))
		defer cli("rm", "-f", donor)
		if m := shmMounts(t, shared, donor); len(m) != 1 || !strings.Contains(m[0], " - tmpfs ") ||
			!strings.Contains(m[0], "nosuid,nodev,noexec") {
			t.Fatalf("the shareable /dev/shm on the host: %q", m)
		}
		if out := must("exec", donor, "sh", "-c", "stat -c %a /dev/shm; df -k /dev/shm | tail -1"); !strings.HasPrefix(out, "1777\n") ||
			!strings.Contains(out, " 2048 ") {
			t.Errorf("donor's /dev/shm (mode, 2m): %q", out)
		}
		joiner := remember(must("run", "-d", "--ipc", "container:"+donor, "busybox", "top"))
		defer cli("rm", "-f", joiner)
		must("exec", donor, "sh", "-c", "printf shared > /dev/shm/f")
		if out := must("exec", joiner, "cat", "/dev/shm/f"); out != "shared" {
			t.Errorf("the joiner reads %q from the donor's /dev/shm", out)
		}
		donorNS := must("exec", donor, "readlink", "/proc/self/ns/ipc")
		if out := must("exec", joiner, "readlink", "/proc/self/ns/ipc"); out != donorNS || out == nsOf(t, "ipc") {
			t.Errorf("IPC namespaces: donor %s, joiner %s, host %s", donorNS, out, nsOf(t, "ipc"))
		}

		// A private container cannot be joined; a stopped one neither.
		private := remember(must("run", "-d", "busybox", "top"))
		defer cli("rm", "-f", private)
		if out := must("inspect", "--format", "{{.HostConfig.IpcMode}} {{.HostConfig.ShmSize}}", private); out != "private 67108864" {
			t.Errorf("inspect of a default container: %q", out)
		}
		r := cli("run", "-d", "--ipc", "container:"+private, "busybox", "top")
		if id := strings.TrimSpace(r.Stdout); id != "" {
			remember(id)
			defer cli("rm", "-f", id)
		}
		if r.Code == 0 || !strings.Contains(r.Stderr, "non-shareable IPC") {
			t.Errorf("joining a private container: %s", r)
		}
		must("stop", "-t", "0", donor)
		if m := shmMounts(t, shared, donor); len(m) != 0 {
			t.Errorf("the shareable /dev/shm stays mounted after stop: %q", m)
		}
		must("stop", "-t", "0", joiner)
		r = cli("start", joiner)
		if r.Code == 0 || !strings.Contains(r.Stderr, "is not running") {
			t.Errorf("joining a stopped container: %s", r)
		}
		// Started again, the donor gets a new, empty /dev/shm.
		must("start", donor)
		if out := must("exec", donor, "ls", "/dev/shm"); out != "" {
			t.Errorf("a restarted donor's /dev/shm holds %q", out)
		}
		if m := shmMounts(t, shared, donor); len(m) != 1 {
			t.Errorf("after the restart: %q", m)
		}
		must("rm", "-f", donor, joiner, private)
		if m := shmMounts(t, shared, donor); len(m) != 0 {
			t.Errorf("the shareable /dev/shm stays mounted after rm: %q", m)
		}
	})
	checkNoShmLeft(t)
}

// checkNoShmLeft fails if any container's shareable /dev/shm of the
// shared daemon is still mounted on the host.
func checkNoShmLeft(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, shared.Root) && strings.Contains(l, "/mounts/shm") {
			t.Errorf("mount left behind: %s", l)
		}
	}
}

// TestIpcNoneHostAndPidUts: --ipc none has no /dev/shm, --ipc host binds
// the host's, --pid host and --uts host share the host's namespaces (what
// the user asked for), --pid container:X joins X's.
func TestIpcNoneHostAndPidUts(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		run := func(args ...string) string {
			t.Helper()
			r := cli(append([]string{"run", "--rm"}, args...)...)
			if r.Code != 0 {
				t.Fatalf("docker run %s: %s", strings.Join(args, " "), r)
			}
			return strings.TrimSpace(r.Stdout)
		}
		if out := run("--ipc", "none", "busybox", "sh", "-c", `awk '$5 == "/dev/shm"' /proc/self/mountinfo; readlink /proc/self/ns/ipc`); out == nsOf(t, "ipc") ||
			strings.Contains(out, "/dev/shm") {
			t.Errorf("--ipc none: %q", out)
		}
		name := ".sdengine-ipc-host-" + strings.ReplaceAll(t.Name(), "/", "-")
		host := filepath.Join("/dev/shm", name)
		defer os.Remove(host)
		if out := run("--ipc", "host", "busybox", "sh", "-c", "printf from-container > /dev/shm/"+name+"; readlink /proc/self/ns/ipc"); out != nsOf(t, "ipc") {
			t.Errorf("--ipc host: namespace %q, host's %q", out, nsOf(t, "ipc"))
		}
		if b, err := os.ReadFile(host); err != nil || string(b) != "from-container" {
			t.Errorf("--ipc host: the host's /dev/shm holds %q (%v)", b, err)
		}
		if out := run("--pid", "host", "busybox", "readlink", "/proc/self/ns/pid"); out != nsOf(t, "pid") {
			t.Errorf("--pid host: %q, host's %q", out, nsOf(t, "pid"))
		}
		if out := run("busybox", "readlink", "/proc/self/ns/pid"); out == nsOf(t, "pid") {
			t.Errorf("default: the host's PID namespace %q", out)
		}
		hostname, _ := os.Hostname()
		if out := run("--uts", "host", "busybox", "sh", "-c", "hostname; readlink /proc/self/ns/uts"); out != hostname+"\n"+nsOf(t, "uts") {
			t.Errorf("--uts host: %q", out)
		}

		r := cli("run", "-d", "busybox", "top")
		if r.Code != 0 {
			t.Fatal(r)
		}
		donor := remember(r.Stdout)
		defer cli("rm", "-f", donor)
		donorNS := strings.TrimSpace(cli("exec", donor, "readlink", "/proc/self/ns/pid").Stdout)
		if out := run("--pid", "container:"+donor, "busybox", "sh", "-c", "readlink /proc/self/ns/pid; ps -o comm"); !strings.HasPrefix(out, donorNS+"\n") ||
			!strings.Contains(out, "top") {
			t.Errorf("--pid container: %q, donor's namespace %q", out, donorNS)
		}
	})
}

// A shareable /dev/shm outlives a kill -9 of the daemon with its running
// container (the container still uses it), can still be joined after the
// restart, and is released when the container that exited while no daemon
// ran is found by recovery.
func TestIpcShareableAcrossDaemonKill(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	keeper := remember(d.MustCLI(t, "run", "-d", "--ipc", "shareable", "busybox", "top"))
	ender := remember(d.MustCLI(t, "run", "-d", "--ipc", "shareable", "busybox", "sh", "-c", "sleep 1"))
	d.MustCLI(t, "exec", keeper, "sh", "-c", "printf kept > /dev/shm/f")
	d.Kill(t)
	time.Sleep(1500 * time.Millisecond) // "ender" exits while no daemon runs
	d.Start(t)
	if m := shmMounts(t, d, keeper); len(m) != 1 {
		t.Fatalf("the running container's /dev/shm after the restart: %q", m)
	}
	if m := shmMounts(t, d, ender); len(m) != 0 {
		t.Errorf("the /dev/shm of a container that exited while no daemon ran: %q", m)
	}
	if out := d.MustCLI(t, "run", "--rm", "--ipc", "container:"+keeper, "busybox", "cat", "/dev/shm/f"); out != "kept" {
		t.Errorf("joined after the restart: %q", out)
	}
	d.MustCLI(t, "rm", "-f", keeper, ender)
	if m := shmMounts(t, d, keeper); len(m) != 0 {
		t.Errorf("after rm: %q", m)
	}
}
