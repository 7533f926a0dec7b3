package native

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/oci"
)

func TestPrivilegedAndMultipleAttachers(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d,
		"grep -E '^Seccomp:' /proc/1/status; ls /dev/null /dev/zero >/dev/null && echo devs; touch /sys/x 2>/dev/null; mount | grep -c ' /sys .*rw' ",
		ctrOpts{spec: func(o *oci.SpecOptions) { o.Privileged = true }})
	var a, b syncBuf
	done := make(chan error, 2)
	for _, w := range []*syncBuf{&a, &b} {
		go func(w *syncBuf) { done <- task.Attach(context.Background(), execdriver.Streams{Stdout: w, Stderr: w}) }(w)
	}
	time.Sleep(30 * time.Millisecond)
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, task)
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if a.String() != b.String() {
		t.Fatalf("attachers differ: %q vs %q", a.String(), b.String())
	}
	out := a.String()
	if st.Code != 0 || !strings.Contains(out, "Seccomp:\t0\n") || !strings.Contains(out, "devs\n") {
		t.Fatalf("status %+v output %q", st, out)
	}
}
