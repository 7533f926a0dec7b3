package systemd

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
)

// The machined tests run against a real dbus-daemon and systemd-machined.
// TestMain re-runs the test binary in a private mount namespace with a
// tmpfs on /run, so the stock system bus socket path is ours and the host's
// /run is untouched; everything started there is stopped before it exits,
// and the namespace goes with the process.
const inNSEnv = "SDENGINE_MACHINED_NS"

const machinedBin = "/lib/systemd/systemd-machined"

// missing names what this machine lacks for the machined tests ("" when
// nothing): they skip, or fail under SDENGINE_REQUIRE_ALL=1.
var missing string

func TestMain(m *testing.M) {
	if os.Getenv(inNSEnv) == "" {
		missing = missingForMachined()
	}
	if os.Getenv(inNSEnv) == "" && missing == "" {
		testenv.Reexec(inNSEnv, "--mount", "--propagation", "private")
	}
	if os.Getenv(inNSEnv) != "" {
		if err := syscall.Mount("tmpfs", "/run", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=755"); err != nil {
			fmt.Fprintln(os.Stderr, "tmpfs on /run:", err)
			os.Exit(1)
		}
		if err := startBus(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			stopBus()
			os.Exit(1)
		}
	}
	code := m.Run()
	stopBus()
	os.Exit(code)
}

func missingForMachined() string {
	if os.Geteuid() != 0 {
		return "root"
	}
	for _, need := range []struct{ prog, pkg string }{
		{machinedBin, "systemd-container"},
		{"machinectl", "systemd-container"},
		{"dbus-daemon", "dbus"},
		{"busctl", "systemd"},
		{"unshare", "util-linux"},
	} {
		if !testenv.HaveExecutable(need.prog) {
			return need.prog + " (apt-get install " + need.pkg + ")"
		}
	}
	return ""
}

var bus struct {
	dbusPid  int
	machined *exec.Cmd
}

// startBus starts the system bus (stock configuration, so machined's
// policy file applies) and machined, and waits until machined owns its name.
func startBus() error {
	// /run/systemd/system: machinectl refuses to run without it (sd_booted).
	for _, d := range []string{"/run/dbus", "/run/systemd/system"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	out, err := exec.Command("dbus-daemon", "--system", "--fork", "--nopidfile", "--print-pid").Output()
	if err != nil {
		return fmt.Errorf("dbus-daemon: %w", err)
	}
	if bus.dbusPid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return fmt.Errorf("dbus-daemon pid %q: %w", out, err)
	}
	bus.machined = exec.Command(machinedBin)
	bus.machined.Stderr = os.Stderr
	if err := bus.machined.Start(); err != nil {
		return fmt.Errorf("machined: %w", err)
	}
	for i := 0; i < 100; i++ {
		if exec.Command("busctl", "status", "org.freedesktop.machine1").Run() == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("machined did not appear on the bus")
}

func stopBus() {
	if bus.machined != nil && bus.machined.Process != nil {
		_ = bus.machined.Process.Kill()
		_ = bus.machined.Wait()
		bus.machined = nil
	}
	if bus.dbusPid > 0 {
		_ = syscall.Kill(bus.dbusPid, syscall.SIGTERM)
		// Not our child (it forked): wait until it is gone.
		for i := 0; i < 100 && syscall.Kill(bus.dbusPid, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		bus.dbusPid = 0
	}
}

func needMachined(t *testing.T) {
	t.Helper()
	testenv.Require(t, os.Getenv(inNSEnv) != "", missing)
}
