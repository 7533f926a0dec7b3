package native

import (
	"os"
	"strings"
	"testing"
)

// The descriptors given to Create are the process's fds 3, 4, ... and
// nothing else of the daemon's or the shim's is open in it.
func TestExtraFilesReachTheProcess(t *testing.T) {
	d := newTestDriver(t)
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	// An open descriptor of the test's own that must not leak in.
	stray, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	task, _ := createContainer(t, d, `echo one >&3; echo two >&4; ls /proc/self/fd | sort -n | tr '\n' ' '`,
		ctrOpts{extra: []*os.File{w1, w2}})
	// The caller's copies are its own to close.
	w1.Close()
	w2.Close()
	out, errOut, st := runAttached(t, task, "")
	if st.Code != 0 {
		t.Fatalf("exit %d, stderr %q", st.Code, errOut)
	}
	// 0-2 stdio, 3-4 the pipes, and the fd ls opened for the listing.
	if got := strings.TrimSpace(out); got != "0 1 2 3 4 5" {
		t.Errorf("fds in the container: %q, want 0-4 and ls's own", got)
	}
	for _, c := range []struct {
		f    *os.File
		want string
	}{{r1, "one\n"}, {r2, "two\n"}} {
		b := make([]byte, 64)
		n, _ := c.f.Read(b)
		if string(b[:n]) != c.want {
			t.Errorf("read %q, want %q", b[:n], c.want)
		}
		// Every writer is gone (the process exited, the shim closed
		// its copies): EOF.
		if n, err := c.f.Read(b); n != 0 || err == nil {
			t.Errorf("pipe still open after the exit: %d %v", n, err)
		}
	}
}
