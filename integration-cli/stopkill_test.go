//go:build integration

package integrationcli

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
)

// pollUntil polls cond every 50ms until it holds or the timeout passes.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stateOf(id string) string {
	return strings.TrimSpace(shared.CLI("inspect", "-f", "{{.State.Status}}", id).Stdout)
}

// trapsTERM waits until the container's PID 1 handles SIGTERM (its trap
// is set): a signal that comes before that is ignored by PID 1, in
// Docker as here.
func trapsTERM(t *testing.T, id string) {
	t.Helper()
	pid := strings.TrimSpace(shared.MustCLI(t, "inspect", "-f", "{{.State.Pid}}", id))
	pollUntil(t, 10*time.Second, "the shell's SIGTERM trap", func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "SigCgt:"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				return err == nil && mask&(1<<(int(syscall.SIGTERM)-1)) != 0
			}
		}
		return false
	})
}

// A shell as PID 1 that traps SIGTERM gets the stop signal and its trap
// runs: stop returns as soon as it exits, with the trap's exit code.
func TestStopShellTrapsTERM(t *testing.T) {
	for i := 0; i < 3; i++ {
		id := strings.TrimSpace(shared.MustCLI(t, "run", "-d", "busybox", "sh", "-c", "trap 'echo received TERM; exit 7' TERM; while true; do usleep 10; done"))
		defer shared.CLI("rm", "-f", id)
		trapsTERM(t, id)
		start := time.Now()
		shared.MustCLI(t, "stop", "-t", "30", id)
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("stop took %s: the trap did not run", el)
		}
		if code := strings.TrimSpace(shared.MustCLI(t, "inspect", "-f", "{{.State.ExitCode}}", id)); code != "7" {
			t.Errorf("exit code %s, want the trap's 7", code)
		}
		if logs := shared.MustCLI(t, "logs", id); !strings.Contains(logs, "received TERM") {
			t.Errorf("logs: %q", logs)
		}
	}
}

// A stop request cancelled by its client after the signal went out does
// not stop the stop: the container is killed when the timeout ends.
func TestStopCancelledRequestStillStops(t *testing.T) {
	id := strings.TrimSpace(shared.MustCLI(t, "run", "-d", "busybox", "sh", "-c", "trap 'echo received TERM' TERM; while true; do usleep 10; done"))
	defer shared.CLI("rm", "-f", id)
	trapsTERM(t, id)
	cli := shared.Client(t)
	defer cli.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() {
		secs := 3
		stopped <- cli.ContainerStop(ctx, id, containertypes.StopOptions{Timeout: &secs})
	}()
	pollUntil(t, 10*time.Second, "the trap's output", func() bool {
		return strings.Contains(shared.CLI("logs", id).Stdout, "received TERM")
	})
	cancel()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled stop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled stop request did not return")
	}
	if st := stateOf(id); st != "running" {
		t.Errorf("after the cancelled request: %s, want still running until the timeout", st)
	}
	pollUntil(t, 8*time.Second, "the container killed at the end of the stop timeout", func() bool { return stateOf(id) == "exited" })
	if code := strings.TrimSpace(shared.MustCLI(t, "inspect", "-f", "{{.State.ExitCode}}", id)); code != "137" {
		t.Errorf("exit code %s, want 137 (SIGKILL)", code)
	}
}

// A restart request cancelled by its client still stops and starts the
// container.
func TestRestartCancelledRequestStillRestarts(t *testing.T) {
	id := strings.TrimSpace(shared.MustCLI(t, "run", "-d", "busybox", "sh", "-c", "trap 'echo received TERM' TERM; while true; do usleep 10; done"))
	defer shared.CLI("rm", "-f", id)
	before := shared.MustCLI(t, "inspect", "-f", "{{.State.StartedAt}}", id)
	cli := shared.Client(t)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	secs := 1
	if err := cli.ContainerRestart(ctx, id, containertypes.StopOptions{Timeout: &secs}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("restart with a 100ms deadline: %v", err)
	}
	pollUntil(t, 10*time.Second, "the restarted container", func() bool {
		return stateOf(id) == "running" && shared.CLI("inspect", "-f", "{{.State.StartedAt}}", id).Stdout != before
	})
}

// kill with the container's stop signal, and rm -f, of containers with a
// stop signal and a restart policy: the container's own stop signal ends
// the policy, another signal leaves it (the container is restarted), as
// in Docker.
func TestKillAndRemoveWithStopSignalAndRestartPolicy(t *testing.T) {
	for _, sig := range []string{"TERM", "CONT"} {
		id := strings.TrimSpace(shared.MustCLI(t, "run", "-d", "--restart", "always", "--stop-signal", sig, "busybox", "top"))
		shared.MustCLI(t, "kill", "-s", "TERM", id)
		if sig == "TERM" {
			pollUntil(t, 10*time.Second, "top to exit on SIGTERM", func() bool { return stateOf(id) == "exited" })
		} else {
			pollUntil(t, 10*time.Second, "top restarted by its policy", func() bool {
				return shared.CLI("inspect", "-f", "{{.State.Status}} {{.RestartCount}}", id).Stdout == "running 1\n"
			})
		}
		shared.MustCLI(t, "rm", "-f", id)
		id = strings.TrimSpace(shared.MustCLI(t, "run", "-d", "--restart", "always", "--stop-signal", sig, "busybox", "top"))
		shared.MustCLI(t, "rm", "-f", id)
		if r := shared.CLI("inspect", id); r.Code == 0 {
			t.Errorf("stop signal %s: the container is still there after rm -f", sig)
		}
	}
}

// An auto-remove container can be restarted (the restart's exit does not
// remove it) and is removed when it is then killed or stopped.
func TestAutoRemoveContainerCanBeRestarted(t *testing.T) {
	for _, end := range [][]string{{"kill"}, {"stop", "-t", "0"}} {
		id := strings.TrimSpace(shared.MustCLI(t, "run", "-d", "--rm", "busybox", "top"))
		defer shared.CLI("rm", "-f", id)
		shared.MustCLI(t, "restart", "-t", "0", id)
		if st := stateOf(id); st != "running" {
			t.Fatalf("after restart: %q, want running", st)
		}
		time.Sleep(200 * time.Millisecond)
		if st := stateOf(id); st != "running" {
			t.Fatalf("after restart: %q, want still running", st)
		}
		shared.MustCLI(t, append(end, id)...)
		pollUntil(t, 10*time.Second, "the container removed after "+end[0], func() bool { return shared.CLI("inspect", id).Code != 0 })
	}
}
