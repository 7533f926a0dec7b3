// Package fakedriver is an exec driver whose containers run no process:
// the daemon's core (start, exit, restart policy, stop, recovery) can be
// unit-tested on it without root, runc or a shim. A test drives the
// containers' lives itself: Task.Exit ends one with a code, as its process
// would; a signal ends it with 128+signal, as a process that does not
// handle it. It imitates what the daemon relies on of the native driver
// (daemon/execdriver's contract: Restore's errors, Delete's idempotence,
// Conflict for a signal to an exited task) and nothing of runc's
// behaviour beyond that.
//
// Give it to the daemon with daemon.WithExecDriver. It is test support,
// but a package so that the tests of any package built on the daemon can
// use it.
package fakedriver

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/pkg/errdefs"
)

// firstPid is the first fake pid. Pids are below the kernel's pid_max,
// which is at most 2^22: a fake pid never names a real process, so
// whatever the daemon reads of /proc for it is absent, never another
// process's.
const firstPid = 1 << 22

// Driver is a fake execdriver.Driver. Its zero value is not usable: use New.
type Driver struct {
	mu        sync.Mutex
	tasks     map[string]*Task // by container id, until Delete
	creates   int
	nextPid   int
	createErr error
	startErr  error
}

// New returns a driver that holds no container.
func New() *Driver {
	return &Driver{tasks: map[string]*Task{}, nextPid: firstPid}
}

var _ execdriver.Driver = (*Driver)(nil)

// FailCreate makes every Create fail with err from now on (nil: succeed
// again), as the native driver's does when the container cannot be set up.
func (d *Driver) FailCreate(err error) {
	d.mu.Lock()
	d.createErr = err
	d.mu.Unlock()
}

// FailStart makes every Task.Start fail with err from now on (nil:
// succeed again): a process that could not be let run, e.g. an
// &execdriver.StartError{Code: 127} for a command not found.
func (d *Driver) FailStart(err error) {
	d.mu.Lock()
	d.startErr = err
	d.mu.Unlock()
}

// Seed records a task for container id as an earlier daemon's driver
// would have left it, for a recovery test: started (running) or created
// but never started. Exit it before the daemon's New for a container that
// exited while no daemon watched.
func (d *Driver) Seed(id string, started bool) *Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.newTaskLocked(execdriver.CreateOptions{ID: id})
	t.started = started
	return t
}

// Task returns container id's task, nil if the driver has none (never
// created, or deleted).
func (d *Driver) Task(id string) *Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tasks[id]
}

// Creates counts the successful Creates so far, of every container.
func (d *Driver) Creates() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.creates
}

func (d *Driver) newTaskLocked(o execdriver.CreateOptions) *Task {
	t := &Task{d: d, id: o.ID, pid: d.nextPid, opts: o, exited: make(chan struct{})}
	d.nextPid++
	d.tasks[o.ID] = t
	return t
}

// Create implements execdriver.Driver: the task waits for Start.
func (d *Driver) Create(ctx context.Context, o execdriver.CreateOptions) (execdriver.Task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.createErr != nil {
		return nil, d.createErr
	}
	if _, ok := d.tasks[o.ID]; ok {
		return nil, errdefs.Conflict(fmt.Errorf("container %s is already running", o.ID))
	}
	d.creates++
	return d.newTaskLocked(o), nil
}

// Restore implements execdriver.Driver, with the native driver's errors.
func (d *Driver) Restore(ctx context.Context, id string) (execdriver.Task, error) {
	t := d.Task(id)
	if t == nil {
		return nil, errdefs.NotFound(fmt.Errorf("no such container in the runtime: %s", id))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.done:
		return nil, fmt.Errorf("restoring %s: %w", id, &execdriver.ExitedError{Status: t.status})
	case !t.started:
		return nil, fmt.Errorf("restoring %s: %w", id, &execdriver.NotStartedError{Pid: t.pid})
	}
	return t, nil
}

// List implements execdriver.Driver.
func (d *Driver) List() ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.tasks))
	for id := range d.tasks {
		ids = append(ids, id)
	}
	return ids, nil
}

// Delete implements execdriver.Driver: a task still running is killed
// (exit 137) and forgotten.
func (d *Driver) Delete(id string) error {
	d.mu.Lock()
	t := d.tasks[id]
	delete(d.tasks, id)
	d.mu.Unlock()
	if t != nil {
		t.exit(128 + int(syscall.SIGKILL))
	}
	return nil
}

// BundleConfig implements execdriver.Driver. Nothing is ever written
// there.
func (d *Driver) BundleConfig(id string) string {
	return filepath.Join("/nonexistent/fakedriver", id, "config.json")
}

// Task is a fake container: it "runs" from Start until Exit, a signal or
// its driver's Delete.
type Task struct {
	d    *Driver
	id   string
	pid  int
	opts execdriver.CreateOptions

	mu      sync.Mutex
	started bool
	paused  bool
	signals []syscall.Signal
	done    bool
	status  execdriver.ExitStatus
	exited  chan struct{} // closed once done
}

var _ execdriver.Task = (*Task)(nil)

// Options are what the daemon created the task with (its OCI spec among
// them); a seeded task has only its ID.
func (t *Task) Options() execdriver.CreateOptions { return t.opts }

// Started reports whether Start succeeded (or the task was seeded started).
func (t *Task) Started() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// Signals are the signals the task was sent, in order.
func (t *Task) Signals() []syscall.Signal {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]syscall.Signal(nil), t.signals...)
}

// Exit ends the task with code, as its process's exit would; a task that
// already ended keeps its first status.
func (t *Task) Exit(code int) { t.exit(code) }

// Exited is closed once the task ended.
func (t *Task) Exited() <-chan struct{} { return t.exited }

func (t *Task) exit(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	t.status = execdriver.ExitStatus{Code: code, ExitedAt: time.Now().UTC()}
	close(t.exited)
}

// Pid implements execdriver.Task: a pid no process has (see firstPid).
func (t *Task) Pid() int { return t.pid }

// Start implements execdriver.Task; it fails with the driver's FailStart
// error if there is one.
func (t *Task) Start() error {
	t.d.mu.Lock()
	err := t.d.startErr
	t.d.mu.Unlock()
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return errdefs.Conflict(fmt.Errorf("container %s is not running", t.id))
	}
	t.started = true
	return nil
}

// Signal implements execdriver.Task: the task dies of any signal but 0,
// with 128+sig, as a process that does not handle it.
func (t *Task) Signal(sig syscall.Signal) error {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return errdefs.Conflict(fmt.Errorf("container %s is not running", t.id))
	}
	t.signals = append(t.signals, sig)
	t.mu.Unlock()
	if sig != 0 {
		t.exit(128 + int(sig))
	}
	return nil
}

// Resize implements execdriver.Task (a no-op).
func (t *Task) Resize(height, width uint16) error { return nil }

// Wait implements execdriver.Task.
func (t *Task) Wait(ctx context.Context) (execdriver.ExitStatus, error) {
	select {
	case <-t.exited:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.status, nil
	case <-ctx.Done():
		return execdriver.ExitStatus{}, ctx.Err()
	}
}

// Attach implements execdriver.Task: the task writes nothing; the
// attachment ends with the task or ctx.
func (t *Task) Attach(ctx context.Context, s execdriver.Streams) error {
	select {
	case <-t.exited:
	case <-ctx.Done():
	}
	return nil
}

// AttachReady implements execdriver.Task, as Attach.
func (t *Task) AttachReady(ctx context.Context, s execdriver.Streams) (func() error, error) {
	return func() error { return t.Attach(ctx, s) }, nil
}

// Exec implements execdriver.Task: not supported (a fake runs no
// process to exec in).
func (t *Task) Exec(ctx context.Context, o execdriver.ExecOptions) (execdriver.Process, error) {
	return nil, errdefs.NotImplemented(fmt.Errorf("fakedriver: no exec in container %s", t.id))
}

// Pause implements execdriver.Task.
func (t *Task) Pause() error { return t.setPaused(true) }

// Resume implements execdriver.Task.
func (t *Task) Resume() error { return t.setPaused(false) }

func (t *Task) setPaused(p bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return errdefs.Conflict(fmt.Errorf("container %s is not running", t.id))
	}
	t.paused = p
	return nil
}

// Paused reports whether the task is paused.
func (t *Task) Paused() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paused
}

// Update implements execdriver.Task (accepted, not recorded).
func (t *Task) Update(u execdriver.Update) error { return nil }

// Stats implements execdriver.Task: all zero.
func (t *Task) Stats() (*cgroups.Stats, error) { return cgroups.NewStats(), nil }

// ReopenLog implements execdriver.Task: there is no log to reopen.
func (t *Task) ReopenLog() error {
	return errdefs.NotImplemented(fmt.Errorf("fakedriver: no log to reopen"))
}
