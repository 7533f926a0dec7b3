//go:build integration

package integrationcli

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
// running, within 30 s. A boot that ends degraded fails the test: a caller
// that expects units to fail uses waitBootedExpectFailed.
func waitBooted(t *testing.T, id string) time.Duration {
	t.Helper()
	return waitBootedExpectFailed(t, id, nil)
}

// waitBootedExpectFailed is waitBooted for a boot where the units named in
// mayFail (unit → why it fails in this test) are allowed to fail; a failed
// unit outside mayFail fails the test.
func waitBootedExpectFailed(t *testing.T, id string, mayFail map[string]string) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		r := shared.CLI("exec", id, "systemctl", "is-system-running", "--wait")
		switch state := strings.TrimSpace(r.Stdout); state {
		case "running":
			return time.Since(start)
		case "degraded":
			took := time.Since(start)
			list := shared.CLI("exec", id, "systemctl", "--failed", "--no-legend", "--plain").Stdout
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
				status := shared.CLI(append([]string{"exec", id, "systemctl", "status", "--no-pager", "-n", "20"}, unexpected...)...).Stdout
				t.Fatalf("systemd booted degraded; unexpected failed units %v; systemctl --failed:\n%s\n%s", unexpected, list, status)
			}
			return took
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("systemd did not boot within 30s; logs:\n%s", shared.CLI("logs", id).Stdout)
	return 0
}

func TestSystemdBoot(t *testing.T) {
	needSystemdImage(t)
	if fi, err := os.Stat("/var/log/journal"); err != nil || !fi.IsDir() {
		// The host has no persistent journal: make one for the test.
		if err := os.MkdirAll("/var/log/journal", 0o2755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove("/var/log/journal")
	}
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
	if fi, err := os.Stat("/var/log/journal"); err != nil || !fi.IsDir() {
		os.MkdirAll("/var/log/journal", 0o2755)
		defer os.Remove("/var/log/journal")
	}
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
