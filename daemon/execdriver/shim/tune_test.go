package shim

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
)

// awaitExit returns once the process exited, and the wait then finds it.
func TestAwaitExit(t *testing.T) {
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	awaitExit(cmd.Process.Pid)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("returned after %v, before the exit", d)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// readEach delivers everything written, from a pipe and from a
// descriptor made pollable.
func TestReadEach(t *testing.T) {
	for _, wrap := range []bool{false, true} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if wrap {
			r = pollable(r)
		}
		want := bytes.Repeat([]byte("0123456789"), 20000)
		go func() {
			w.Write(want)
			w.Close()
		}()
		var got []byte
		readEach(r, func(p []byte) { got = append(got, p...) })
		r.Close()
		if !bytes.Equal(got, want) {
			t.Fatalf("pollable=%v: got %d bytes, want %d", wrap, len(got), len(want))
		}
	}
}

// Equal seccomp profiles are one in memory.
func TestSharedSeccomp(t *testing.T) {
	a := &configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{{Name: "read", Action: configs.Allow}}}
	b := &configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{{Name: "read", Action: configs.Allow}}}
	c := &configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{{Name: "write", Action: configs.Allow}}}
	if sharedSeccomp(a) != a || sharedSeccomp(b) != a || sharedSeccomp(c) != c || sharedSeccomp(nil) != nil {
		t.Fatal("profiles not shared as they should be")
	}
}

func TestSetBundleLabel(t *testing.T) {
	c := &configs.Config{Labels: []string{"a=b", "bundle=/wrong"}}
	setBundleLabel(c, "/run/x/id")
	if c.Labels[1] != "bundle=/run/x/id" || len(c.Labels) != 2 {
		t.Fatalf("labels %v", c.Labels)
	}
}
