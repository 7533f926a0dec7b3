package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
)

// Two containers share one shim; each one's exit is recorded on its own,
// and the shim goes after the last.
func TestGroupTwoContainers(t *testing.T) {
	d := newTestDriver(t)
	d.SetShimGroupSize(2)
	a, _ := createContainer(t, d, "exit 3", ctrOpts{})
	b, _ := createContainer(t, d, "read x; exit 4", ctrOpts{openStdin: true})
	pa, pb := shimproto.LiveShimPid(a.dir), shimproto.LiveShimPid(b.dir)
	if pa == 0 || pa != pb {
		t.Fatalf("shims %d and %d: not one group", pa, pb)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, a); st.Code != 3 {
		t.Fatalf("a: %+v", st)
	}
	if st, _ := shimproto.ReadExit(a.dir); st == nil || st.Code != 3 {
		t.Fatalf("a's recorded exit: %+v", st)
	}
	waitFor(t, "a released", func() bool { return shimproto.LiveShimPid(a.dir) == 0 })
	if shimproto.LiveShimPid(b.dir) != pa {
		t.Fatal("the shim went with b still running")
	}
	if err := b.Signal(syscall.SIGKILL); err != nil {
		st, _ := shimproto.ReadExit(b.dir)
		t.Fatalf("%v (exit %+v)", err, st)
	}
	if st := waitExit(t, b); st.Code != 137 {
		t.Fatalf("b: %+v", st)
	}
	waitFor(t, "the shim's exit", func() bool { return syscall.Kill(pa, 0) != nil })
}

// kill -9 of one group's shim costs only that group's containers: they
// are recorded as exited abnormally (255) and killed, as with a dead shim
// of one container; the other group's container runs on.
func TestGroupShimKilled(t *testing.T) {
	d := newTestDriver(t)
	d.SetShimGroupSize(2)
	a, _ := createContainer(t, d, "sleep 1000", ctrOpts{})
	b, _ := createContainer(t, d, "sleep 1000", ctrOpts{})
	c, _ := createContainer(t, d, "sleep 1000", ctrOpts{})
	for _, task := range []*Task{a, b, c} {
		if err := task.Start(); err != nil {
			t.Fatal(err)
		}
	}
	victim := shimproto.LiveShimPid(a.dir)
	if victim == 0 || shimproto.LiveShimPid(b.dir) != victim || shimproto.LiveShimPid(c.dir) == victim {
		t.Fatal("not two groups as expected")
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, task := range []*Task{a, b} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := task.Wait(ctx)
		cancel()
		if err == nil {
			t.Fatalf("%s: wait succeeded though its shim died", task.id)
		}
		// What the daemon's recovery does with a dead shim.
		_, err = d.Restore(context.Background(), task.id)
		var exited *execdriver.ExitedError
		if !errors.As(err, &exited) || exited.Status.Code != 255 {
			t.Fatalf("%s: restore after its shim died: %v", task.id, err)
		}
		if alive(task.pid) {
			t.Fatalf("%s: its process %d survived", task.id, task.pid)
		}
	}
	if err := c.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the other group's container: %v", err)
	}
	if _, err := d.Restore(context.Background(), c.id); err != nil {
		t.Fatalf("the other group's container: %v", err)
	}
	// New containers go to a live shim, not the dead one.
	e, _ := createContainer(t, d, "true", ctrOpts{})
	if p := shimproto.LiveShimPid(e.dir); p == 0 || p == victim {
		t.Fatalf("new container's shim %d", p)
	}
}

// A shim of an earlier daemon that is gone leaves no directory behind
// once a new driver starts; live ones are kept.
func TestGroupDirsOfDeadShimsRemoved(t *testing.T) {
	d := newTestDriver(t)
	dead := filepath.Join(d.groupsDir(), "deadbeef")
	if err := os.MkdirAll(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead, shimproto.ShimPidFile), []byte("1\n"), 0o600)
	a, _ := createContainer(t, d, "sleep 1000", ctrOpts{})
	d2, err := New(d.execRoot, d.shimBinary, false)
	if err != nil {
		t.Fatal(err)
	}
	_ = d2
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("dead shim's directory: %v", err)
	}
	if shimproto.LiveShimPid(a.dir) == 0 {
		t.Fatal("the live shim went")
	}
}

// alive: pid exists and is not a zombie (the container's processes are
// reparented when their shim dies, and reaped by whoever that is).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
