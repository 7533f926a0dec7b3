package native

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
)

// failingWriter takes n writes, then fails like a connection whose client
// went away.
type failingWriter struct{ n atomic.Int32 }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n.Add(-1) < 0 {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

// frames writes frames on one end of a pipe and returns a reader of the
// other; the writer stops when the reader side is closed.
func frames(t *testing.T, kinds ...byte) (*bufio.Reader, <-chan int) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	sent := make(chan int, 1)
	go func() {
		fw := shimproto.NewFrameWriter(a)
		n := 0
		for _, k := range kinds {
			p := []byte("out\n")
			if k == shimproto.FrameExit {
				p = []byte("7")
			}
			if fw.WriteFrame(k, p) != nil {
				break
			}
			n++
		}
		sent <- n
	}()
	return bufio.NewReader(b), sent
}

func TestPumpOutputStopsAnAttachWhoseClientIsGone(t *testing.T) {
	kinds := []byte{shimproto.FrameStdout, shimproto.FrameStderr, shimproto.FrameStdout}
	for i := 0; i < 100; i++ {
		kinds = append(kinds, shimproto.FrameStdout)
	}
	br, _ := frames(t, append(kinds, shimproto.FrameEnd)...)
	w := &failingWriter{}
	w.n.Store(2)
	err := pumpOutput(br, execdriver.Streams{Stdout: w, Stderr: w}, nil)
	if err == nil {
		t.Fatal("an attach whose client is gone read on to the end")
	}
	if w.n.Load() != -1 {
		t.Errorf("%d writes after the failed one", -1-w.n.Load())
	}
}

func TestPumpOutputReadsAnExecToItsExitCode(t *testing.T) {
	kinds := []byte{shimproto.FrameStdout, shimproto.FrameStderr}
	for i := 0; i < 100; i++ {
		kinds = append(kinds, shimproto.FrameStdout, shimproto.FrameStderr)
	}
	br, sent := frames(t, append(kinds, shimproto.FrameExit)...)
	out, errw := &failingWriter{}, &failingWriter{}
	out.n.Store(1)
	errw.n.Store(1)
	code := ""
	if err := pumpOutput(br, execdriver.Streams{Stdout: out, Stderr: errw}, func(b []byte) { code = string(b) }); err != nil {
		t.Fatal(err)
	}
	if code != "7" || <-sent != len(kinds)+1 {
		t.Fatalf("exit code %q", code)
	}
	// Each writer was dropped at its first failure.
	if out.n.Load() != -1 || errw.n.Load() != -1 {
		t.Errorf("writes after a failure: stdout %d, stderr %d", -1-out.n.Load(), -1-errw.n.Load())
	}
}

func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// An attach whose client went away ends at once, and the shim lets go of
// its subscription (its connection) while the container runs on.
func TestAttachEndsWhenClientIsGone(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "while :; do echo tick; sleep 0.02; done", ctrOpts{openStdin: true})
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	shimPid := shimproto.LiveShimPid(task.dir)
	if shimPid == 0 {
		t.Fatal("no shim")
	}
	base := fdCount(t, shimPid)
	// With a stdin that never ends, as a client's connection would be.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	defer pr.Close()
	w := &failingWriter{}
	w.n.Store(3)
	done := make(chan error, 1)
	go func() { done <- task.Attach(context.Background(), execdriver.Streams{Stdin: pr, Stdout: w}) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the attach ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the attach went on after its client was gone")
	}
	waitFor(t, "the shim's fds back to "+strconv.Itoa(base), func() bool { return fdCount(t, shimPid) <= base })
	if err := syscall.Kill(task.Pid(), 0); err != nil || shimproto.LiveShimPid(task.dir) != shimPid {
		t.Errorf("the container did not run on: %v", err)
	}
}
