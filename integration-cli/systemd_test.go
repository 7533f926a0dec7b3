//go:build integration

package integrationcli

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	systemdImageOnce sync.Once
	systemdImageErr  error
)

const systemdImage = "it-systemd"

// systemdImage imports the cached Debian-with-systemd rootfs (built by
// hack/images/systemd.sh with mmdebstrap) plus a file under /run, so the
// tests can see the /run tmpfs seeded from the image.
func needSystemdImage(t *testing.T) {
	t.Helper()
	systemdImageOnce.Do(func() {
		out, err := exec.Command(repoRoot + "/hack/images/systemd.sh").Output()
		if err != nil {
			systemdImageErr = err
			return
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(withRunFile(strings.TrimSpace(string(out)), pw)) }()
		cmd := exec.Command(ourCLI, "import", "-c", `CMD ["/sbin/init"]`, "-", systemdImage)
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+shared.Host())
		cmd.Stdin = pr
		if b, err := cmd.CombinedOutput(); err != nil {
			systemdImageErr = &importError{string(b)}
		}
	})
	if systemdImageErr != nil {
		t.Fatalf("systemd image: %v", systemdImageErr)
	}
}

type importError struct{ out string }

func (e *importError) Error() string { return "import: " + e.out }

// withRunFile copies the tar at path to w, adding ./run/seeded-by-image.
func withRunFile(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	tw := tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	body := "from the image\n"
	if err := tw.WriteHeader(&tar.Header{Name: "./run/seeded-by-image", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	io.WriteString(tw, body)
	return tw.Close()
}

// waitBooted polls systemctl inside the container until systemd reports
// running. A boot that ends degraded fails the test: a caller that
// expects units to fail uses waitBootedExpectFailed.
func waitBooted(t *testing.T, id string) time.Duration {
	t.Helper()
	return waitBootedExpectFailed(t, id, nil)
}

// waitBootedExpectFailed is waitBooted for a boot where the units named in
// mayFail (unit → why it fails in this test) are allowed to fail; a failed
// unit outside mayFail fails the test.
func waitBootedExpectFailed(t *testing.T, id string, mayFail map[string]string) time.Duration {
	t.Helper()
	return waitBootedOn(t, shared.CLI, id, mayFail)
}

// Boot waits are bounded by progress, not by a time for the whole boot: a
// loaded machine (two suites side by side, load average 4 and more) boots
// systemd several times slower, but still installs and finishes jobs. A
// boot fails when systemd's job queue has not changed for bootStall (a job
// that hangs: systemd's own start timeout is 90 s), or after bootLimit in
// all, whatever the progress (a unit restarting in a loop).
const (
	bootStall = 60 * time.Second
	bootLimit = 5 * time.Minute
)

// waitBootedOn is waitBootedExpectFailed through cli (a daemon's CLI). It
// reads the manager's state and job counters (systemctl show), so that a
// stall is told from a slow boot, and on failure shows the jobs left.
func waitBootedOn(t *testing.T, cli func(args ...string) Result, id string, mayFail map[string]string) time.Duration {
	t.Helper()
	start := time.Now()
	last, lastChange := "", start
	for {
		r := cli("exec", id, "systemctl", "show", "-p", "SystemState", "-p", "NJobs", "-p", "NInstalledJobs")
		// Before systemd listens, systemctl fails (no bus): that is the
		// state too, and its end is progress.
		progress := strings.TrimSpace(r.Stdout)
		if r.Code != 0 {
			progress = "no manager yet"
		}
		if progress != last {
			last, lastChange = progress, time.Now()
		}
		switch state := showValue(progress, "SystemState"); state {
		case "running":
			return time.Since(start)
		case "degraded":
			took := time.Since(start)
			list := cli("exec", id, "systemctl", "--failed", "--no-legend", "--plain").Stdout
			var unexpected []string
			for _, l := range strings.Split(list, "\n") {
				f := strings.Fields(l)
				if len(f) == 0 {
					continue
				}
				if why, ok := mayFail[f[0]]; ok {
					t.Logf("unit %s failed, as expected: %s", f[0], why)
				} else {
					unexpected = append(unexpected, f[0])
				}
			}
			if len(unexpected) > 0 || strings.TrimSpace(list) == "" {
				status := cli(append([]string{"exec", id, "systemctl", "status", "--no-pager", "-n", "20"}, unexpected...)...).Stdout
				t.Fatalf("systemd booted degraded; unexpected failed units %v; systemctl --failed:\n%s\n%s", unexpected, list, status)
			}
			return took
		}
		stalled := time.Since(lastChange) > bootStall
		if stalled || time.Since(start) > bootLimit {
			why := fmt.Sprintf("no change in systemd's jobs for %v", bootStall)
			if !stalled {
				why = fmt.Sprintf("not booted after %v", bootLimit)
			}
			jobs := cli("exec", id, "systemctl", "list-jobs", "--no-pager").Stdout
			t.Fatalf("systemd did not boot (%s; last %q); jobs:\n%s\nlogs:\n%s", why, last, jobs, cli("logs", "--tail", "40", id).Stdout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// showValue is the value of key in `systemctl show -p` output.
func showValue(show, key string) string {
	for _, l := range strings.Split(show, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	return ""
}

func TestSystemdBoot(t *testing.T) {
	needSystemdImage(t)
	defer needHostJournal(t)()
	created := time.Now()
	id := remember(shared.MustCLI(t, "run", "-d", "--init=systemd", "--name", "sd-boot", systemdImage))
	boot := time.Since(created)
	boot += waitBooted(t, id)
	t.Logf("boot to running: %s", boot)

	if out := shared.MustCLI(t, "exec", id, "cat", "/etc/machine-id"); out != id[:32] {
		t.Errorf("machine-id %q, want %q", out, id[:32])
	}
	env := shared.MustCLI(t, "exec", id, "sh", "-c", "tr '\\0' '\\n' < /proc/1/environ")
	uuid := id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32]
	for _, want := range []string{"container=docker", "container_uuid=" + uuid} {
		if !strings.Contains(env, want) {
			t.Errorf("PID 1 env lacks %s:\n%s", want, env)
		}
	}
	checkContainerInterface(t, id, uuid, env)
	if out := shared.MustCLI(t, "exec", id, "sh", "-c", "cat /run/seeded-by-image; stat -f -c %T /run /run/lock /tmp"); out != "from the image\ntmpfs\ntmpfs\ntmpfs" {
		t.Errorf("/run seeding and tmpfs: %q", out)
	}
	// The container's cgroup subtree is its own and writable.
	if r := shared.CLI("exec", id, "sh", "-c", "d=/sys/fs/cgroup/systemd; [ -d $d ] || d=/sys/fs/cgroup; mkdir $d/it-probe && rmdir $d/it-probe"); r.Code != 0 {
		t.Errorf("cgroup subtree not writable: %s", r)
	}
	journalDir := filepath.Join("/var/log/journal", id[:32])
	jr, err := exec.Command("journalctl", "-D", journalDir, "--no-pager").CombinedOutput()
	if err != nil || !strings.Contains(string(jr), "systemd") {
		t.Errorf("journalctl -D %s: %v\n%s", journalDir, err, jr)
	}
	if logs := shared.MustCLI(t, "logs", id); !strings.Contains(logs, "Reached target") {
		t.Errorf("docker logs does not show the boot:\n%s", logs)
	}
	if out := shared.MustCLI(t, "inspect", "--format", "{{.Config.StopSignal}} {{json .Config}}", id); !strings.HasPrefix(out, "SIGRTMIN+3 ") || !strings.Contains(out, `"Init":"systemd"`) {
		t.Errorf("inspect: %s", out)
	}

	start := time.Now()
	shared.MustCLI(t, "stop", id)
	stop := time.Since(start)
	t.Logf("stop: %s", stop)
	if stop > 3*time.Second {
		t.Errorf("docker stop took %s", stop)
	}
	if code := shared.MustCLI(t, "inspect", "--format", "{{.State.ExitCode}}", id); code != "0" {
		t.Errorf("exit code after stop: %s", code)
	}
	if _, err := os.Stat(journalDir); err != nil {
		t.Errorf("journal removed before rm: %v", err)
	}
	shared.MustCLI(t, "rm", id)
	if _, err := os.Stat(journalDir); !os.IsNotExist(err) {
		t.Errorf("rm left the journal directory: %v", err)
	}
}

// The stock CLI cannot say --init=systemd, but an image whose command is
// an init gets the profile by itself. And SIGTERM alone does not stop
// systemd: SIGRTMIN+3 (37) does.
func TestSystemdAutoProfileAndStopSignal(t *testing.T) {
	needSystemdImage(t)
	r := shared.Stock("run", "-d", systemdImage, "/sbin/init")
	if r.Code != 0 {
		t.Fatal(r)
	}
	id := remember(r.Stdout)
	defer shared.CLI("rm", "-f", id)
	if out := strings.TrimSpace(shared.Stock("inspect", "--format", "{{.Config.StopSignal}}", id).Stdout); out != "SIGRTMIN+3" {
		t.Errorf("automatic profile: stop signal %q", out)
	}
	waitBooted(t, id)
	shared.MustCLI(t, "kill", "-s", "TERM", id)
	time.Sleep(2 * time.Second)
	if st := shared.MustCLI(t, "inspect", "--format", "{{.State.Status}}", id); st != "running" {
		t.Fatalf("SIGTERM stopped systemd (%s): the stop signal test proves nothing", st)
	}
	waitBooted(t, id) // it re-executed itself
	shared.MustCLI(t, "kill", "-s", "37", id)
	if code := shared.MustCLI(t, "wait", id); code != "0" {
		t.Errorf("exit code after SIGRTMIN+3 (37): %s", code)
	}
}

func TestSystemdUserRunMountAndReadOnly(t *testing.T) {
	needSystemdImage(t)
	dir := t.TempDir()
	if out := shared.MustCLI(t, "run", "--rm", "--init=systemd", "-v", dir+":/run", systemdImage, "ls", "/run"); strings.Contains(out, "seeded-by-image") {
		t.Errorf("-v on /run still seeded it: %q", out)
	}
	defer needHostJournal(t)()
	id := remember(shared.MustCLI(t, "run", "-d", "--read-only", "--init=systemd", systemdImage))
	waitBootedExpectFailed(t, id, map[string]string{
		"systemd-logind.service": "its StateDirectory /var/lib/systemd/linger is not in the image and cannot be created on a read-only root (238/STATE_DIRECTORY)",
	})
	if out := shared.MustCLI(t, "exec", id, "cat", "/etc/machine-id"); out != id[:32] {
		t.Errorf("read-only: machine-id %q", out)
	}
	journalDir := filepath.Join("/var/log/journal", id[:32])
	waitFor(t, func() bool {
		files, _ := filepath.Glob(journalDir + "/*.journal")
		return len(files) > 0
	})
	shared.MustCLI(t, "rm", "-f", id)
	if _, err := os.Stat(journalDir); !os.IsNotExist(err) {
		t.Errorf("rm -f left the journal directory")
	}
}

// checkContainerInterface checks, in a booted container, what systemd's
// Container Interface asks of the engine: the /run/host files (read-only),
// the container_host_* variables in PID 1's environment (env), what
// systemd-detect-virt makes of it and no audit capabilities.
func checkContainerInterface(t *testing.T, id, uuid, env string) {
	t.Helper()
	if out := shared.MustCLI(t, "exec", id, "cat", "/run/host/container-manager"); out != "docker" {
		t.Errorf("/run/host/container-manager %q", out)
	}
	if out := shared.MustCLI(t, "exec", id, "cat", "/run/host/container-uuid"); out != uuid {
		t.Errorf("/run/host/container-uuid %q, want %q", out, uuid)
	}
	hostOSR, err := os.ReadFile("/etc/os-release")
	if err != nil {
		hostOSR, err = os.ReadFile("/usr/lib/os-release")
	}
	if err != nil {
		t.Fatalf("host os-release: %v", err)
	}
	if out := shared.MustCLI(t, "exec", id, "cat", "/run/host/os-release"); out != strings.TrimSpace(string(hostOSR)) {
		t.Errorf("/run/host/os-release %q, want the host's %q", out, hostOSR)
	}
	// Read-only for root in the container, the directory too.
	for _, cmd := range []string{"echo x > /run/host/os-release", "touch /run/host/new", "rm /run/host/container-manager"} {
		if r := shared.CLI("exec", id, "sh", "-c", cmd); r.Code == 0 {
			t.Errorf("%s succeeded in the container", cmd)
		}
	}
	if b, _ := os.ReadFile("/etc/os-release"); string(b) != string(hostOSR) {
		t.Errorf("the host's os-release changed")
	}
	if out := shared.MustCLI(t, "exec", id, "systemd-detect-virt", "-c"); out != "docker" {
		t.Errorf("systemd-detect-virt -c: %q", out)
	}
	// The identifying fields of the host's os-release, as systemd names
	// them; this host's has ID and VERSION_ID.
	for _, l := range strings.Split(string(hostOSR), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID", "VERSION_ID", "BUILD_ID", "VARIANT_ID", "IMAGE_ID", "IMAGE_VERSION":
			if want := "container_host_" + strings.ToLower(k) + "=" + v; !strings.Contains(env+"\n", want+"\n") {
				t.Errorf("PID 1 env lacks %s:\n%s", want, env)
			}
		}
	}
	if !strings.Contains(env, "container_host_id=") {
		t.Errorf("PID 1 env has no container_host_id:\n%s", env)
	}
	if strings.Contains(env, "container_ttys=") {
		t.Errorf("container_ttys without a tty:\n%s", env)
	}
	// CAP_AUDIT_WRITE (29), CAP_AUDIT_CONTROL (30), CAP_AUDIT_READ (37).
	line := shared.MustCLI(t, "exec", id, "grep", "CapBnd", "/proc/1/status")
	f := strings.Fields(line)
	if len(f) != 2 {
		t.Fatalf("CapBnd line %q", line)
	}
	bnd, err := strconv.ParseUint(f[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, bit := range []uint{29, 30, 37} {
		if bnd&(1<<bit) != 0 {
			t.Errorf("PID 1's bounding set %s has capability %d (audit)", f[1], bit)
		}
	}
	if bnd&(1<<27) == 0 { // CAP_MKNOD: the interface says keep it
		t.Errorf("PID 1's bounding set %s lacks CAP_MKNOD", f[1])
	}
}

// With -t the terminal is /dev/console (it used to fail at start: a
// second pty at /dev/console took the terminal's place as PID 1's
// controlling tty), and systemd starts its console getty on it; there is
// no other pty to name in container_ttys. docker logs is not checked: the
// shim stops reading a terminal once no process holds it open (EIO),
// which systemd's way of opening the console only to write makes likely
// before the boot messages.
func TestSystemdTTYConsole(t *testing.T) {
	needSystemdImage(t)
	id := remember(shared.MustCLI(t, "run", "-d", "-t", "--init=systemd", systemdImage))
	defer shared.CLI("rm", "-f", id)
	waitBooted(t, id)
	env := shared.MustCLI(t, "exec", id, "sh", "-c", "tr '\\0' '\\n' < /proc/1/environ")
	if strings.Contains(env, "container_ttys=") {
		t.Errorf("PID 1 env has container_ttys:\n%s", env)
	}
	if out := shared.MustCLI(t, "exec", id, "sh", "-c", "grep ' /dev/console ' /proc/self/mountinfo"); !strings.Contains(out, " devpts ") {
		t.Errorf("/dev/console is not the terminal: %s", out)
	}
	if out := shared.CLI("exec", id, "systemctl", "is-active", "console-getty.service").Stdout; strings.TrimSpace(out) != "active" {
		t.Errorf("console-getty.service: %q\n%s", out, shared.CLI("exec", id, "systemctl", "status", "--no-pager", "console-getty.service").Stdout)
	}
}

// A mount of the user's below /run/host is the user's /run/host: the
// container starts (its mount point could not be made in the engine's
// read-only /run/host) and the engine's files are not there.
func TestSystemdUserMountBelowRunHost(t *testing.T) {
	needSystemdImage(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s3"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := remember(shared.MustCLI(t, "run", "-d", "--init=systemd", "-v", dir+":/run/host/credentials:ro", systemdImage))
	defer shared.CLI("rm", "-f", id)
	if out := shared.MustCLI(t, "exec", id, "cat", "/run/host/credentials/secret"); out != "s3" {
		t.Errorf("user's mount: %q", out)
	}
	if r := shared.CLI("exec", id, "test", "-e", "/run/host/container-manager"); r.Code == 0 {
		t.Error("the engine's /run/host beside the user's mount")
	}
}
