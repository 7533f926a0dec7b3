package fakedriver

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/pkg/errdefs"
)

// The fake keeps execdriver's contract as the daemon relies on it.
func TestContract(t *testing.T) {
	ctx := context.Background()
	d := New()
	if _, err := d.Restore(ctx, "none"); !errdefs.IsNotFound(err) {
		t.Fatalf("Restore of an unknown container: %v, want NotFound", err)
	}
	task, err := d.Create(ctx, execdriver.CreateOptions{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(ctx, execdriver.CreateOptions{ID: "c1"}); !errdefs.IsConflict(err) {
		t.Fatalf("second Create: %v, want Conflict", err)
	}
	var ns *execdriver.NotStartedError
	if _, err := d.Restore(ctx, "c1"); !errors.As(err, &ns) || ns.Pid != task.Pid() {
		t.Fatalf("Restore before Start: %v", err)
	}
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	if r, err := d.Restore(ctx, "c1"); err != nil || r.Pid() != task.Pid() {
		t.Fatalf("Restore of a running task: %v", err)
	}
	if err := task.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st, err := task.Wait(ctx)
	if err != nil || st.Code != 143 || st.ExitedAt.IsZero() {
		t.Fatalf("Wait after SIGTERM: %+v %v", st, err)
	}
	if err := task.Signal(syscall.SIGKILL); !errdefs.IsConflict(err) {
		t.Fatalf("Signal to an exited task: %v, want Conflict", err)
	}
	var ex *execdriver.ExitedError
	if _, err := d.Restore(ctx, "c1"); !errors.As(err, &ex) || ex.Status.Code != 143 {
		t.Fatalf("Restore of an exited task: %v", err)
	}
	if err := d.Delete("c1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete("c1"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if ids, _ := d.List(); len(ids) != 0 {
		t.Fatalf("List after Delete: %v", ids)
	}

	boom := &execdriver.StartError{Code: 127, Err: errors.New("not found")}
	d.FailStart(boom)
	task, err = d.Create(ctx, execdriver.CreateOptions{ID: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(); !errors.Is(err, boom) {
		t.Fatalf("Start: %v, want %v", err, boom)
	}
	d.FailCreate(errors.New("no"))
	if _, err := d.Create(ctx, execdriver.CreateOptions{ID: "c3"}); err == nil {
		t.Fatal("Create succeeded despite FailCreate")
	}
}
