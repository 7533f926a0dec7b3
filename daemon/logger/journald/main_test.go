package journald

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/internal/testenv"
)

// The tests talk to a real systemd-journald. The host has none (PID 1 is not
// systemd), so TestMain re-runs the test binary in a private mount namespace
// where tmpfs covers /run and /var/log/journal, and starts journald there:
// it binds /run/systemd/journal/socket itself and keeps its journal in
// /run/log/journal. Everything vanishes with the namespace when the binary
// exits; journald, the one process we start, is ended by its PID first.

const nsEnv = "JOURNALD_TEST_IN_NS"

const journaldBin = "/lib/systemd/systemd-journald"

// haveJournald is false where the tests cannot set journald up: they skip,
// or fail under SDENGINE_REQUIRE_ALL=1, naming what is missing.
var (
	haveJournald bool
	missing      string
)

func TestMain(m *testing.M) {
	if os.Getenv(nsEnv) == "" {
		missing = missingForJournald()
	}
	if os.Getenv(nsEnv) == "" && missing == "" {
		testenv.Reexec(nsEnv, "--mount", "--propagation", "private")
	}
	var stop func()
	if os.Getenv(nsEnv) == "1" {
		var err error
		if stop, err = startJournald(); err != nil {
			fmt.Fprintln(os.Stderr, "start journald:", err)
			os.Exit(1)
		}
		haveJournald = true
	}
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// missingForJournald names what this machine lacks to run the tests, or
// is "" when nothing is missing.
func missingForJournald() string {
	if os.Geteuid() != 0 {
		return "root"
	}
	for _, need := range []struct{ prog, pkg string }{
		{journaldBin, "systemd"},
		{"journalctl", "systemd"},
		{"unshare", "util-linux"},
	} {
		if !testenv.HaveExecutable(need.prog) {
			return need.prog + " (apt-get install " + need.pkg + ")"
		}
	}
	return ""
}

// startJournald mounts the private /run and journal directory, starts
// journald and waits for its socket. stop ends journald and waits for it.
func startJournald() (stop func(), err error) {
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
		return nil, fmt.Errorf("mount /run: %w", err)
	}
	// Hide the host's persistent journal: journalctl must see only ours,
	// and nothing of the tests may land on the host.
	if _, err := os.Stat("/var/log/journal"); err == nil {
		if err := unix.Mount("tmpfs", "/var/log/journal", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
			return nil, fmt.Errorf("mount /var/log/journal: %w", err)
		}
	}
	if err := os.MkdirAll("/run/systemd/journal", 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(journaldBin)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=warning", "SYSTEMD_LOG_TARGET=console")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	for i := 0; i < 100; i++ {
		if checkSocket() == nil {
			return stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return nil, fmt.Errorf("journald socket did not appear")
}

func needJournald(t *testing.T) {
	t.Helper()
	testenv.Require(t, haveJournald, missing)
}
