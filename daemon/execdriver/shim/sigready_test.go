package shim

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// An init that installs its TERM trap only after a stop was sent still
// gets the stop signal: it is delivered again once the trap is there.
func TestSignalWhenReadyRedeliversDroppedSignal(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `sleep 0.3; trap "exit 7" TERM; while :; do sleep 0.01; done`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting an init in a PID namespace of its own: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })

	time.Sleep(50 * time.Millisecond) // the shell runs, its trap not yet set
	pid := cmd.Process.Pid
	send := func(sig syscall.Signal) error { return syscall.Kill(pid, sig) }
	if err := signalWhenReady(pid, syscall.SIGTERM, time.Now().Add(settleWindow), send); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 7 {
			t.Fatalf("the init ended with %v, want exit status 7 (its trap ran)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the TERM sent before the trap was set was never delivered")
	}
}

// Past the settling window a signal is sent once, as it is.
func TestSignalWhenReadyAfterWindowSendsOnce(t *testing.T) {
	n := 0
	send := func(syscall.Signal) error { n++; return nil }
	if err := signalWhenReady(os.Getpid(), syscall.SIGTERM, time.Now().Add(-time.Second), send); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("sent %d times, want 1", n)
	}
}

func TestReadSigState(t *testing.T) {
	st, err := readSigState(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The Go runtime catches SIGURG for preemption.
	if st.dropped(syscall.SIGURG) {
		t.Fatalf("SIGURG shows as not caught in %+v", st)
	}
}
