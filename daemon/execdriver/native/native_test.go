package native

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/go-units"
	"github.com/opencontainers/cgroups"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
)

func TestRunOutputAndExitCode(t *testing.T) {
	d := newTestDriver(t)
	task, logPath := createContainer(t, d, "echo hi; echo err >&2; exit 3", ctrOpts{log: true})
	if task.Pid() <= 0 {
		t.Fatalf("pid %d", task.Pid())
	}
	out, errOut, st := runAttached(t, task, "")
	if out != "hi\n" || errOut != "err\n" {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
	if st.Code != 3 || st.ExitedAt.IsZero() || st.OOMKilled {
		t.Fatalf("status %+v", st)
	}
	// The log has both lines, each tagged with its stream.
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m struct{ Log, Stream string }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		got[m.Stream] += m.Log
	}
	if got["stdout"] != "hi\n" || got["stderr"] != "err\n" {
		t.Fatalf("log %v", got)
	}
	// The recorded status survives for a later daemon.
	if st2, err := shimproto.ReadExit(task.dir); err != nil || st2 == nil || st2.Code != 3 {
		t.Fatalf("exit file %+v %v", st2, err)
	}
	// Operations on an exited container are conflicts.
	waitFor(t, "shim exit", func() bool { return shimproto.LiveShimPid(task.dir) == 0 })
	if err := task.Signal(syscall.SIGTERM); !errdefs.IsConflict(err) {
		t.Fatalf("signal after exit: %v", err)
	}
	if st3 := waitExit(t, task); st3.Code != 3 {
		t.Fatalf("wait after shim exit: %+v", st3)
	}
}

func TestTtyResize(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "read x; stty size", ctrOpts{tty: true, openStdin: true, height: 24, width: 80})
	pr, pw, _ := os.Pipe()
	var out syncBuf
	done := make(chan error, 1)
	go func() { done <- task.Attach(context.Background(), execdriver.Streams{Stdin: pr, Stdout: &out}) }()
	time.Sleep(20 * time.Millisecond)
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	if err := task.Resize(50, 132); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("\n"))
	st := waitExit(t, task)
	<-done
	pw.Close()
	if st.Code != 0 || !strings.Contains(out.String(), "50 132") {
		t.Fatalf("status %+v output %q", st, out.String())
	}
}

func TestStdinOnce(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "cat; echo done", ctrOpts{openStdin: true, stdinOnce: true})
	out, _, st := runAttached(t, task, "hello\nworld\n")
	if st.Code != 0 || out != "hello\nworld\ndone\n" {
		t.Fatalf("status %+v output %q", st, out)
	}
}

func TestExecAndSignal(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "trap 'exit 5' TERM; while true; do sleep 0.05; done", ctrOpts{})
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	var out, errOut syncBuf
	p, err := task.Exec(ctx, execdriver.ExecOptions{
		Args: []string{"sh", "-c", "echo out; echo err >&2; id -u; exit 7"}, Env: []string{"PATH=/bin"},
		UID: 1000, GID: 1000, Streams: execdriver.Streams{Stdout: &out, Stderr: &errOut},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Pid() <= 0 {
		t.Fatal("no exec pid")
	}
	code, err := p.Wait(ctx)
	if err != nil || code != 7 {
		t.Fatalf("exec code %d err %v", code, err)
	}
	if out.String() != "out\n1000\n" || errOut.String() != "err\n" {
		t.Fatalf("exec stdout %q stderr %q", out.String(), errOut.String())
	}

	// With a tty and stdin; the size set at start and a resize apply.
	var ttyOut syncBuf
	pr, pw, _ := os.Pipe()
	p, err = task.Exec(ctx, execdriver.ExecOptions{
		Args: []string{"sh", "-c", "tty; read x; stty size"}, Env: []string{"PATH=/bin"}, Tty: true,
		ConsoleHeight: 10, ConsoleWidth: 40, Streams: execdriver.Streams{Stdin: pr, Stdout: &ttyOut},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tty output", func() bool { return strings.Contains(ttyOut.String(), "/dev/pts/") })
	if err := p.Resize(33, 99); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("\n"))
	code, err = p.Wait(ctx)
	pw.Close()
	if err != nil || code != 0 || !strings.Contains(ttyOut.String(), "33 99") {
		t.Fatalf("tty exec code %d err %v out %q", code, err, ttyOut.String())
	}

	// A privileged exec gets more than the container's capabilities.
	var capOut syncBuf
	p, err = task.Exec(ctx, execdriver.ExecOptions{Args: []string{"grep", "CapEff", "/proc/self/status"}, Env: []string{"PATH=/bin"},
		Privileged: true, Streams: execdriver.Streams{Stdout: &capOut}})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(ctx); code != 0 || err != nil || strings.Contains(capOut.String(), "a80425fb") || !strings.Contains(capOut.String(), "CapEff") {
		t.Fatalf("privileged exec: %d %v %q", code, err, capOut.String())
	}

	// Exec of a missing binary is the caller's mistake.
	if _, err := task.Exec(ctx, execdriver.ExecOptions{Args: []string{"/nope"}}); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("missing exec binary: %v", err)
	}

	// Signalling an exec'd process.
	p, err = task.Exec(ctx, execdriver.ExecOptions{Args: []string{"/bin/sleep", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.(*ExecProcess).Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code, _ := p.Wait(ctx); code != 137 {
		t.Fatalf("killed exec code %d", code)
	}

	if err := task.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, task); st.Code != 5 {
		t.Fatalf("status %+v", st)
	}
}

func TestCreateErrorsLeaveNothing(t *testing.T) {
	d := newTestDriver(t)
	for _, args := range [][]string{{"/does/not/exist"}, {"nosuchcmd"}} {
		spec, err := oci.Build(oci.SpecOptions{ID: "bad", Rootfs: testRootfs, Args: args, CgroupParent: testCgroupParent})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Create(context.Background(), execdriver.CreateOptions{ID: "bad", Spec: spec})
		if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), "no such file") && !strings.Contains(err.Error(), "not found") {
			t.Fatalf("%v: error %v", args, err)
		}
		if _, err := os.Stat(d.stateDir("bad")); !os.IsNotExist(err) {
			t.Fatalf("state dir left: %v", err)
		}
		if _, err := os.Stat(filepath.Join(d.runcRoot, "bad")); !os.IsNotExist(err) {
			t.Fatalf("runc state left: %v", err)
		}
	}
	spec, _ := oci.Build(oci.SpecOptions{ID: "badcwd", Rootfs: testRootfs, Args: []string{"true"}, Cwd: "/nonexistent/dir", CgroupParent: testCgroupParent})
	// libcontainer creates a missing cwd; a file as cwd is an error.
	spec.Process.Cwd = "/etc/passwd"
	if _, err := d.Create(context.Background(), execdriver.CreateOptions{ID: "badcwd", Spec: spec}); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("bad cwd: %v", err)
	}
}

func TestRestoreAfterDaemonDeath(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.05; done", ctrOpts{log: true})
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	id, pid := task.ID(), task.Pid()
	// The daemon "dies": all in-memory state is dropped.
	d2, err := New(d.execRoot, d.shimBinary, false)
	if err != nil {
		t.Fatal(err)
	}
	task = nil
	d = nil
	t2, err := d2.Restore(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if t2.Pid() != pid {
		t.Fatalf("restored pid %d, want %d", t2.Pid(), pid)
	}
	var out syncBuf
	done := make(chan error, 1)
	go func() { done <- t2.Attach(context.Background(), execdriver.Streams{Stdout: &out}) }()
	waitFor(t, "output after restore", func() bool { return strings.Count(out.String(), "tick") >= 2 })
	if err := t2.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, t2); st.Code != 137 {
		t.Fatalf("status %+v", st)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Restore(context.Background(), "unknown"); !errdefs.IsNotFound(err) {
		t.Fatalf("restore unknown: %v", err)
	}
}

func TestExitWhileDaemonDown(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "sleep 0.2; exit 4", ctrOpts{})
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	id, dir := task.ID(), task.dir
	waitFor(t, "exit record", func() bool { st, _ := shimproto.ReadExit(dir); return st != nil })
	waitFor(t, "shim exit", func() bool { return shimproto.LiveShimPid(dir) == 0 })
	d2, _ := New(d.execRoot, d.shimBinary, false)
	_, err := d2.Restore(context.Background(), id)
	var ee *execdriver.ExitedError
	if !errors.As(err, &ee) || ee.Status.Code != 4 {
		t.Fatalf("restore: %v", err)
	}
	if err := d2.Delete(id); err != nil {
		t.Fatal(err)
	}
	if err := d2.Delete(id); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := d2.Restore(context.Background(), id); !errdefs.IsNotFound(err) {
		t.Fatalf("restore after delete: %v", err)
	}
}

func TestShimKilledDeleteCleansUp(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "sleep 100", ctrOpts{})
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	shimPid := shimproto.LiveShimPid(task.dir)
	if shimPid == 0 {
		t.Fatal("no shim")
	}
	syscall.Kill(shimPid, syscall.SIGKILL)
	waitFor(t, "shim death", func() bool { return shimproto.LiveShimPid(task.dir) == 0 })
	// A new daemon finds the orphan, kills it and reports it exited.
	d2, _ := New(d.execRoot, d.shimBinary, false)
	_, err := d2.Restore(context.Background(), task.ID())
	var ee *execdriver.ExitedError
	if !errors.As(err, &ee) {
		t.Fatalf("restore: %v", err)
	}
	if err := syscall.Kill(task.Pid(), 0); err == nil {
		// Orphaned init is reaped by pid 1 eventually; it must be dead.
		waitFor(t, "container init death", func() bool {
			b, err := os.ReadFile("/proc/" + itoa(task.Pid()) + "/stat")
			return err != nil || strings.Contains(string(b), ") Z ")
		})
	}
}

func TestLimitsHostnameNetworkCapsSeccomp(t *testing.T) {
	d := newTestDriver(t)
	pids := int64(50)
	task, _ := createContainer(t, d,
		"hostname; ls /sys/class/net; cat /sys/class/net/lo/flags; grep -E '^(CapEff|Seccomp):' /proc/1/status; echo nofile=$(ulimit -n); grep memory /proc/1/cgroup",
		ctrOpts{spec: func(o *oci.SpecOptions) {
			o.Memory = 64 << 20
			o.PidsLimit = &pids
			// Above our own hard limit: must be clamped, not fail with EPERM.
			o.Ulimits = []*units.Ulimit{{Name: "nofile", Soft: 1 << 30, Hard: 1 << 30}}
		}})
	out, errOut, st := runAttached(t, task, "")
	if st.Code != 0 {
		t.Fatalf("status %+v stderr %q", st, errOut)
	}
	var rl syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	want := []string{"box\n", "lo\n", "0x9\n", "CapEff:\t00000000a80425fb\n", "Seccomp:\t2\n",
		"nofile=" + strconv.FormatUint(min(rl.Max, 1<<30), 10) + "\n"}
	if !cgroups.IsCgroup2UnifiedMode() {
		want = append(want, "memory:/\n") // private cgroup namespace
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output %q lacks %q", out, w)
		}
	}

	// Limits land in the cgroup files while the container runs.
	task2, _ := createContainer(t, d, "sleep 100", ctrOpts{spec: func(o *oci.SpecOptions) {
		o.Memory = 64 << 20
		o.PidsLimit = &pids
	}})
	mem := readCgroupFile(t, "memory", task2.ID(), "memory.limit_in_bytes", "memory.max")
	if mem != "67108864" {
		t.Errorf("memory limit %q", mem)
	}
	if p := readCgroupFile(t, "pids", task2.ID(), "pids.max", "pids.max"); p != "50" {
		t.Errorf("pids limit %q", p)
	}
}

func readCgroupFile(t *testing.T, controller, id, v1, v2 string) string {
	t.Helper()
	p := filepath.Join("/sys/fs/cgroup", controller, testCgroupParent, id, v1)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		p = filepath.Join("/sys/fs/cgroup", testCgroupParent, id, v2)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCreateStartWaitTiming measures the daemon-visible cost of running
// `true`: create (shim + runc init) + start + wait.
func TestCreateStartWaitTiming(t *testing.T) {
	d := newTestDriver(t)
	const n = 5
	var total, creates, starts time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		spec, _ := oci.Build(oci.SpecOptions{ID: "timing", Rootfs: testRootfs, Args: []string{"true"}, CgroupParent: testCgroupParent})
		task, err := d.Create(context.Background(), execdriver.CreateOptions{ID: "timing", Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		if err := task.Start(); err != nil {
			t.Fatal(err)
		}
		t2 := time.Now()
		st := waitExit(t, task)
		total += time.Since(t0)
		creates += t1.Sub(t0)
		starts += t2.Sub(t1)
		if st.Code != 0 {
			t.Fatalf("status %+v", st)
		}
		if err := d.Delete("timing"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("create+start+wait of true: %v average over %d runs (create %v, start %v)", total/n, n, creates/n, starts/n)
}

// A container created but never started (its daemon died between Create
// and Start) is reported as such by Restore, listed by List, and Delete
// has its shim kill it: the shim reaps the init and exits, leaving no
// orphan behind.
func TestRestoreNotStarted(t *testing.T) {
	d := newTestDriver(t)
	task, _ := createContainer(t, d, "echo should-not-run", ctrOpts{})
	id, pid, dir := task.ID(), task.Pid(), task.dir
	d2, _ := New(d.execRoot, d.shimBinary, false)
	ids, err := d2.List()
	if err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("list: %v %v", ids, err)
	}
	_, err = d2.Restore(context.Background(), id)
	var ns *execdriver.NotStartedError
	if !errors.As(err, &ns) || ns.Pid != pid {
		t.Fatalf("restore of a container never started: %v", err)
	}
	shimPid := shimproto.LiveShimPid(dir)
	start := time.Now()
	if err := d2.Delete(id); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("delete took %s: the shim was not asked to kill its container", took)
	}
	if _, err := os.Stat("/proc/" + itoa(pid)); err == nil {
		t.Errorf("the container's init %d is left after delete (not reaped by its shim)", pid)
	}
	waitFor(t, "shim reaped", func() bool { _, err := os.Stat("/proc/" + itoa(shimPid)); return err != nil })
	if ids, _ := d2.List(); len(ids) != 0 {
		t.Errorf("state left after delete: %v", ids)
	}
}
