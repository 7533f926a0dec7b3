package native

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/pkg/stringid"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/daemon/oci"
)

func newTestDriver(t *testing.T) *Driver {
	t.Helper()
	needDriver(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	execRoot, err := os.MkdirTemp(testBase, "exec")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(execRoot, self, false)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type ctrOpts struct {
	tty, openStdin, stdinOnce bool
	log                       bool
	spec                      func(*oci.SpecOptions)
	height, width             uint16
	extra                     []*os.File // the process's fds 3, 4, ...
}

// createContainer builds a spec for a shell command in the busybox
// rootfs and creates it; Delete runs at cleanup.
func createContainer(t *testing.T, d *Driver, script string, o ctrOpts) (*Task, string) {
	t.Helper()
	id := "t" + stringid.GenerateRandomID()[:12]
	so := oci.SpecOptions{
		ID: id, Hostname: "box", Rootfs: testRootfs,
		Args: []string{"/bin/sh", "-c", script}, Tty: o.tty,
		NetworkMode: "none", CgroupParent: testCgroupParent,
	}
	if o.spec != nil {
		o.spec(&so)
	}
	spec, err := oci.Build(so)
	if err != nil {
		t.Fatal(err)
	}
	logInfo := logger.Info{Driver: "none", ContainerID: id}
	if o.log {
		logInfo = logger.Info{Driver: "json-file", LogPath: t.TempDir() + "/ctr-json.log", ContainerID: id}
	}
	created, err := d.Create(context.Background(), execdriver.CreateOptions{
		ID: id, Spec: spec, Tty: o.tty, OpenStdin: o.openStdin, StdinOnce: o.stdinOnce,
		ConsoleHeight: o.height, ConsoleWidth: o.width, Log: logInfo,
		ExtraFiles: o.extra,
	})
	if err != nil {
		t.Fatal(err)
	}
	task := created.(*Task)
	t.Cleanup(func() {
		_ = task.Signal(9)
		if err := d.Delete(id); err != nil {
			t.Error(err)
		}
	})
	return task, logInfo.LogPath
}

// syncBuf is a goroutine-safe bytes.Buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitExit(t *testing.T, task execdriver.Task) execdriver.ExitStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runAttached attaches, starts and waits; it returns stdout, stderr, status.
func runAttached(t *testing.T, task execdriver.Task, stdin string) (string, string, execdriver.ExitStatus) {
	t.Helper()
	var out, errb syncBuf
	s := execdriver.Streams{Stdout: &out, Stderr: &errb}
	if stdin != "" {
		s.Stdin = nopCloser{strings.NewReader(stdin)}
	}
	done := make(chan error, 1)
	go func() { done <- task.Attach(context.Background(), s) }()
	// Let the attach subscribe first (Start also waits for in-flight attaches).
	time.Sleep(20 * time.Millisecond)
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, task)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("attach did not return after exit")
	}
	return out.String(), errb.String(), st
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
