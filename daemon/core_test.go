package daemon

// Unit tests of the daemon's core (start, exit, the restart policy, stop,
// recovery at start-up) on the fake exec driver: a whole daemon from New,
// on temporary roots, with no bridge, the vfs graph driver and no
// machined, so that they run as any user and leave nothing on the host.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/daemon/events"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/fakedriver"
	"github.com/sdengine/engine/image"
)

// coreDaemon runs New on root (made by the caller, kept across daemons
// for the recovery tests) with drv as its exec driver. The returned
// function shuts it down, once; the test's clean-up does if it did not.
func coreDaemon(t *testing.T, root string, drv *fakedriver.Driver, liveRestore bool) (*Daemon, func()) {
	t.Helper()
	cfg := config.Default()
	cfg.Root = filepath.Join(root, "root")
	cfg.ExecRoot = filepath.Join(root, "exec")
	cfg.StorageDriver = "vfs" // overlay2 needs root; vfs mounts nothing
	cfg.Bridge = "none"       // no bridge, no NAT table
	cfg.HooksDirs = nil
	cfg.MinFreeSpace = "0"
	cfg.LiveRestore = liveRestore
	d, err := New(context.Background(), cfg, "/nonexistent/docker-shim", WithMachined(nil), WithExecDriver(drv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var once sync.Once
	shutdown := func() { once.Do(func() { d.Shutdown(context.Background()) }) }
	t.Cleanup(shutdown)
	return d, shutdown
}

// coreRoot is a temporary root for daemons; when the test ends (after
// their shutdown) nothing may be mounted below it, and none of the
// daemon's goroutines may be left.
func coreRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	t.Cleanup(func() {
		checkNoMounts(t, root)
		checkNoDaemonGoroutines(t)
	})
	return root
}

func checkNoMounts(t *testing.T, root string) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, root) {
			t.Errorf("mount left behind: %s", line)
		}
	}
}

// checkNoDaemonGoroutines waits a moment for the goroutines of the
// daemon's methods (monitors, restarts, health checks) to end.
func checkNoDaemonGoroutines(t *testing.T) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "engine/daemon.(*Daemon).") {
			return
		}
	}
	var left []string
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "engine/daemon.(*Daemon).") && !strings.Contains(g, "checkNoDaemonGoroutines") {
			left = append(left, g)
		}
	}
	if len(left) > 0 {
		t.Errorf("daemon goroutines left after shutdown:\n%s", strings.Join(left, "\n\n"))
	}
}

// importTestImage makes a one-layer image "core:test" whose command is
// /bin/true (never run: the fake driver runs nothing).
func importTestImage(t *testing.T, d *Daemon) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Owned by the test's user: the import chowns as the tar says, which
	// only root may do to another user.
	uid, gid := os.Getuid(), os.Getgid()
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: uid, Gid: gid},
		{Name: "bin/true", Typeflag: tar.TypeReg, Mode: 0o755, Uid: uid, Gid: gid},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := d.images.Import(context.Background(), &buf, "core:test",
		image.ImportOptions{Config: ocispec.ImageConfig{Cmd: []string{"/bin/true"}}}, nil)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
}

// createTestContainer creates a container of the test image with policy.
func createTestContainer(t *testing.T, d *Daemon, name string, policy containertypes.RestartPolicy) *container.Container {
	t.Helper()
	resp, err := d.ContainerCreate(context.Background(), backend.CreateParams{
		Name:       name,
		Config:     &containertypes.Config{Image: "core:test"},
		HostConfig: &containertypes.HostConfig{RestartPolicy: policy},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	c, err := d.containers.Get(resp.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func stateOf(c *container.Container) container.State {
	c.Lock()
	defer c.Unlock()
	return c.State
}

func restartCount(c *container.Container) int {
	c.Lock()
	defer c.Unlock()
	return c.RestartCount
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitRunning waits until c runs on a task other than prev, and returns it.
func waitRunning(t *testing.T, drv *fakedriver.Driver, c *container.Container, prev *fakedriver.Task) *fakedriver.Task {
	t.Helper()
	var task *fakedriver.Task
	waitFor(t, "the container to run on a new task", func() bool {
		task = drv.Task(c.ID)
		if task == nil || task == prev || !task.Started() {
			return false
		}
		st := stateOf(c)
		return st.Status == container.StatusRunning && st.Pid == task.Pid()
	})
	return task
}

func waitExited(t *testing.T, c *container.Container) container.State {
	t.Helper()
	waitFor(t, "the container to be recorded exited", func() bool { return stateOf(c).Status == container.StatusExited })
	return stateOf(c)
}

func TestCoreStartAndExit(t *testing.T) {
	root := coreRoot(t)
	drv := fakedriver.New()
	d, _ := coreDaemon(t, root, drv, false)
	importTestImage(t, d)
	_, sub := d.events.Subscribe(time.Time{}, time.Time{}, events.Filter{})
	defer d.events.Cancel(sub)

	c := createTestContainer(t, d, "web", containertypes.RestartPolicy{})
	if err := d.ContainerStart(context.Background(), c.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	task := drv.Task(c.ID)
	if task == nil || !task.Started() {
		t.Fatal("no started task in the driver after the start")
	}
	st := stateOf(c)
	if st.Status != container.StatusRunning || st.Pid != task.Pid() || st.StartedAt.IsZero() {
		t.Fatalf("after start: status %s pid %d (task's %d) started %v", st.Status, st.Pid, task.Pid(), st.StartedAt)
	}
	if spec := task.Options().Spec; spec == nil || len(spec.Process.Args) == 0 || spec.Process.Args[0] != "/bin/true" {
		t.Fatalf("spec given to the driver: %+v", spec)
	}
	if d.task(c.ID) == nil {
		t.Fatal("the daemon holds no task for the running container")
	}

	task.Exit(3)
	st = waitExited(t, c)
	if st.ExitCode != 3 || st.Pid != 0 || st.FinishedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Fatalf("after exit: %+v", st)
	}
	if d.task(c.ID) != nil || drv.Task(c.ID) != nil {
		t.Fatal("the task outlived the exit (daemon's or driver's)")
	}

	var got []string
	want := []string{"create", "start", "die exitCode=3"}
	waitFor(t, "the events", func() bool {
		for len(got) < len(want) {
			select {
			case m := <-sub.C():
				if m.Type != eventtypes.ContainerEventType || m.Actor.ID != c.ID {
					continue
				}
				e := string(m.Action)
				if m.Action == eventtypes.ActionDie {
					e += " exitCode=" + m.Actor.Attributes["exitCode"]
				}
				got = append(got, e)
			default:
				return false
			}
		}
		return true
	})
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestCoreRestartOnFailure(t *testing.T) {
	root := coreRoot(t)
	drv := fakedriver.New()
	d, _ := coreDaemon(t, root, drv, false)
	importTestImage(t, d)
	c := createTestContainer(t, d, "flaky", containertypes.RestartPolicy{Name: containertypes.RestartPolicyOnFailure, MaximumRetryCount: 2})
	if err := d.ContainerStart(context.Background(), c.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	// The first run and two restarts (after 100 and 200 ms of back-off)
	// fail; the third failure is the last.
	var task *fakedriver.Task
	for run := 0; run < 3; run++ {
		task = waitRunning(t, drv, c, task)
		if n := restartCount(c); n != run {
			t.Fatalf("run %d: RestartCount %d", run, n)
		}
		task.Exit(1)
	}
	st := waitExited(t, c)
	if st.ExitCode != 1 || restartCount(c) != 2 || drv.Creates() != 3 {
		t.Fatalf("after the last failure: %+v, RestartCount %d, creates %d", st, restartCount(c), drv.Creates())
	}
	if c.RestartManager().Pending() {
		t.Fatal("a restart is pending after the maximum")
	}
}

func TestCoreAlwaysStoppedByUser(t *testing.T) {
	root := coreRoot(t)
	drv := fakedriver.New()
	d, _ := coreDaemon(t, root, drv, false)
	importTestImage(t, d)
	c := createTestContainer(t, d, "always", containertypes.RestartPolicy{Name: containertypes.RestartPolicyAlways})
	if err := d.ContainerStart(context.Background(), c.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	// An exit of its own, even a clean one, is restarted...
	task := waitRunning(t, drv, c, nil)
	task.Exit(0)
	task = waitRunning(t, drv, c, task)

	// ... a stop by the user is not.
	timeout := 5
	if err := d.ContainerStop(context.Background(), c.ID, containertypes.StopOptions{Timeout: &timeout}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if sigs := task.Signals(); len(sigs) != 1 || sigs[0] != 15 {
		t.Fatalf("signals sent by the stop: %v, want [SIGTERM]", sigs)
	}
	st := waitExited(t, c)
	if st.ExitCode != 143 {
		t.Fatalf("exit code after stop: %d, want 143", st.ExitCode)
	}
	// Longer than the next back-off (200 ms): no restart comes.
	time.Sleep(300 * time.Millisecond)
	if st := stateOf(c); st.Status != container.StatusExited || drv.Creates() != 2 {
		t.Fatalf("after stop: status %s, creates %d (want exited, 2)", st.Status, drv.Creates())
	}
}

func TestCoreStartFailure(t *testing.T) {
	notFound := &execdriver.StartError{Code: 127, Err: errors.New(`exec: "/bin/true": stat /bin/true: no such file or directory`)}
	for _, tc := range []struct {
		name     string
		fail     func(*fakedriver.Driver)
		wantCode int
	}{
		{"create", func(drv *fakedriver.Driver) { drv.FailCreate(errors.New("no cgroup for you")) }, 125},
		{"start", func(drv *fakedriver.Driver) { drv.FailStart(notFound) }, 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := coreRoot(t)
			drv := fakedriver.New()
			d, _ := coreDaemon(t, root, drv, false)
			importTestImage(t, d)
			c := createTestContainer(t, d, "broken", containertypes.RestartPolicy{Name: containertypes.RestartPolicyAlways})
			tc.fail(drv)
			err := d.ContainerStart(context.Background(), c.ID)
			if err == nil {
				t.Fatal("start succeeded")
			}
			st := stateOf(c)
			if st.Status != container.StatusCreated || st.ExitCode != tc.wantCode || st.Error != err.Error() || st.Pid != 0 {
				t.Fatalf("after a failed start (%v): %+v", err, st)
			}
			if ids, _ := drv.List(); len(ids) != 0 || d.task(c.ID) != nil {
				t.Fatalf("left after a failed start: driver %v, daemon task %v", ids, d.task(c.ID))
			}
			// The policy does not retry a start that failed; a new start
			// by the user works once the driver does.
			drv.FailCreate(nil)
			drv.FailStart(nil)
			if err := d.ContainerStart(context.Background(), c.ID); err != nil {
				t.Fatalf("start after the failure: %v", err)
			}
			if st := stateOf(c); st.Status != container.StatusRunning || st.Error != "" || st.ExitCode != 0 {
				t.Fatalf("second start: %+v", st)
			}
		})
	}
}

// TestCoreRecovery: a daemon that left with live-restore finds its
// containers again through the exec driver: one still running is
// adopted, one that exited meanwhile is recorded with its exit, one the
// driver has no trace of is recorded lost.
func TestCoreRecovery(t *testing.T) {
	root := coreRoot(t)
	drv1 := fakedriver.New()
	d1, shutdown1 := coreDaemon(t, root, drv1, true)
	importTestImage(t, d1)
	var ids []string
	for _, name := range []string{"alive", "exited", "lost"} {
		c := createTestContainer(t, d1, name, containertypes.RestartPolicy{})
		if err := d1.ContainerStart(context.Background(), c.ID); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		ids = append(ids, c.ID)
	}
	shutdown1()
	for _, id := range ids {
		if st := stateOf(mustGet(t, d1, id)); st.Status != container.StatusRunning {
			t.Fatalf("live-restore shutdown stopped %s: %+v", id, st)
		}
		// The old daemon's monitor ends (and records nothing: it is
		// closing with live-restore).
		drv1.Task(id).Exit(0)
	}

	// The driver's state as the next daemon finds it.
	drv2 := fakedriver.New()
	alive := drv2.Seed(ids[0], true)
	drv2.Seed(ids[1], true).Exit(7)
	d2, _ := coreDaemon(t, root, drv2, false)

	c := mustGet(t, d2, ids[0])
	if st := stateOf(c); st.Status != container.StatusRunning || d2.task(c.ID) == nil {
		t.Fatalf("running container not adopted: %+v", st)
	}
	alive.Exit(4)
	if st := waitExited(t, c); st.ExitCode != 4 {
		t.Fatalf("adopted container's exit: %+v", st)
	}

	c = mustGet(t, d2, ids[1])
	if st := stateOf(c); st.Status != container.StatusExited || st.ExitCode != 7 {
		t.Fatalf("exit while no daemon watched: %+v", st)
	}
	c = mustGet(t, d2, ids[2])
	if st := stateOf(c); st.Status != container.StatusExited || st.ExitCode != 255 || !strings.Contains(st.Error, "container state lost") {
		t.Fatalf("container without a task: %+v", st)
	}
	if ids, _ := drv2.List(); len(ids) != 0 {
		t.Fatalf("driver state left after recovery: %v", ids)
	}
}

// TestCoreRecoveryRollsBackUnstarted: a task created but never let run (a
// daemon killed between create and start) is rolled back: the container
// stays as its record says, and the driver's state goes.
func TestCoreRecoveryRollsBackUnstarted(t *testing.T) {
	root := coreRoot(t)
	d1, shutdown1 := coreDaemon(t, root, fakedriver.New(), false)
	importTestImage(t, d1)
	c := createTestContainer(t, d1, "half", containertypes.RestartPolicy{})
	shutdown1()

	drv2 := fakedriver.New()
	task := drv2.Seed(c.ID, false)
	d2, _ := coreDaemon(t, root, drv2, false)
	if st := stateOf(mustGet(t, d2, c.ID)); st.Status != container.StatusCreated {
		t.Fatalf("after the roll-back: %+v", st)
	}
	select {
	case <-task.Exited():
	default:
		t.Fatal("the unstarted task was not deleted")
	}
	if ids, _ := drv2.List(); len(ids) != 0 {
		t.Fatalf("driver state left: %v", ids)
	}
}

func mustGet(t *testing.T, d *Daemon, id string) *container.Container {
	t.Helper()
	c, err := d.containers.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
