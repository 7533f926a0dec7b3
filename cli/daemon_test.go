package cli

import (
	"bufio"
	"bytes"
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
)

// startPrivateDaemon builds this tree's dockerd and runs it with its own
// socket, data root, exec root, pidfile and (empty) config under a fresh
// directory, so it shares nothing with the host's daemon or with other
// tests' daemons. When t ends, the containers are removed, the daemon is
// stopped by its PID, and the test fails if a process or mount of it is
// left; then the directory is removed. It returns the daemon's -H value.
func startPrivateDaemon(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t)
	// go test puts its own go first in PATH.
	testenv.RequireExecutable(t, "go", "golang (or a Go toolchain in PATH)")

	// Unix socket paths must stay under 108 bytes: not t.TempDir().
	dir, err := os.MkdirTemp("/tmp", "clit-")
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	bin := filepath.Join(dir, "dockerd")
	// The daemon refuses to start without seccomp, whatever tags this
	// test binary was built with.
	build := exec.Command("go", "build", "-tags", "seccomp", "-o", bin, "github.com/sdengine/engine/cmd/dockerd")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("build dockerd: %v\n%s", err, out)
	}
	built := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "d.sock")
	host := "unix://" + sock
	logPath := filepath.Join(dir, "dockerd.log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-H", host,
		"--data-root", filepath.Join(dir, "root"), "--exec-root", filepath.Join(dir, "run"),
		"--pidfile", filepath.Join(dir, "d.pid"), "--config-file", filepath.Join(dir, "daemon.json"), "-D",
		// No docker0: it would clash with other daemons on the host, and
		// a daemon killed at the end of a test leaves it behind.
		"--bridge=none")
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		os.RemoveAll(dir)
		t.Fatalf("start dockerd: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	daemonLog := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}

	t.Cleanup(func() {
		var out bytes.Buffer
		if Run([]string{"-H", host, "ps", "-aq"}, io.NopCloser(strings.NewReader("")), &out, io.Discard) == 0 {
			if ids := strings.Fields(out.String()); len(ids) > 0 {
				Run(append([]string{"-H", host, "rm", "-f"}, ids...), io.NopCloser(strings.NewReader("")), io.Discard, io.Discard)
			}
		}
		// SIGTERM: the daemon stops what still runs and unmounts.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			t.Errorf("dockerd (pid %d) did not stop within 60s after SIGTERM; killing it", cmd.Process.Pid)
			_ = cmd.Process.Kill()
			<-exited
		}
		lf.Close()
		for _, left := range leftovers(dir) {
			t.Errorf("left behind by the private daemon: %s", left)
		}
		if t.Failed() {
			t.Logf("daemon log (%s):\n%s", logPath, daemonLog())
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("dockerd exited at start; log:\n%s", daemonLog())
		default:
		}
		var out bytes.Buffer
		if Run([]string{"-H", host, "version", "--format", "{{.Server.Version}}"}, io.NopCloser(strings.NewReader("")), &out, io.Discard) == 0 && strings.TrimSpace(out.String()) != "" {
			t.Logf("private dockerd (pid %d) in %s: built in %s, answering %s later", cmd.Process.Pid, dir, built.Sub(started).Round(time.Millisecond), time.Since(built).Round(time.Millisecond))
			return host
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("dockerd did not answer within 20s; log:\n%s", daemonLog())
	return ""
}

// leftovers lists the mounts and processes that still name dir.
func leftovers(dir string) []string {
	var left []string
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if strings.Contains(s.Text(), dir) {
				left = append(left, "mount "+s.Text())
			}
		}
		f.Close()
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if strings.Contains(string(cmdline), dir) {
			left = append(left, fmt.Sprintf("process %s %q", filepath.Base(p), strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return left
}
