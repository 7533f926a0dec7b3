// Package shim is the process that owns one container: the daemon binary
// (or docker-shim) re-executed with shimproto.ShimCommand by the native
// exec driver (daemon/execdriver/native), detached from the daemon so that
// the container outlives it. It creates the container with libcontainer up
// to the user's process, reports on the ready pipe, then holds the
// container's stdio (pipes, a pty, the /dev/console pty), writes its log,
// runs execs, applies the two-level cgroups (cgroups.go), and serves the
// control socket (daemon/execdriver/shimproto) until the container exited;
// it records the exit status, removes the container and exits.
package shim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	// Device cgroup rules are only applied when this is linked in.
	_ "github.com/opencontainers/cgroups/devices"
	// The C half of "init": joins namespaces before the Go runtime starts.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
)

// drainTimeout bounds how long the shim waits for the container's output
// to reach EOF after init exited (a leaked descriptor could hold it open).
const drainTimeout = 5 * time.Second

// Main runs the shim: args are its group directory, the libcontainer
// root and how many containers it may host at once (group.go). It never
// returns: the shim exits once its last container is gone.
func Main(args []string) {
	catchSignals()
	tuneRuntime()
	ready := os.NewFile(shimproto.ReadyFd, "ready")
	if len(args) != 3 {
		slog.Error("shim: bad arguments", "args", args)
		os.Exit(2)
	}
	max, err := strconv.Atoi(args[2])
	if err != nil || max < 1 {
		slog.Error("shim: bad group size", "size", args[2])
		os.Exit(2)
	}
	logs := setupLog(filepath.Join(args[0], shimproto.ShimLogFile))
	g := newGroup(args[0], max)
	g.host = func(req shimproto.CreateRequest, files []*os.File, gone func()) (int, error) {
		return hostContainer(args[0], args[1], req, files, gone)
	}
	g.exit = func() {
		slog.Info("shim: last container gone; exiting")
		_ = os.Remove(filepath.Join(args[0], shimproto.GroupSocketName))
		_ = os.Remove(filepath.Join(args[0], shimproto.ShimPidFile))
		logs.flush()
		os.Exit(0)
	}
	if err := g.listen(); err != nil {
		slog.Error("shim: group socket", "err", err)
		_ = shimproto.WriteJSONLine(ready, shimproto.ErrResponse(err))
		os.Exit(1)
	}
	_ = shimproto.WriteJSONLine(ready, shimproto.Response{Pid: os.Getpid()})
	ready.Close()
	g.serve()
	select {} // the last container's end exits
}

// hostContainer creates the container of req in this shim and runs it
// until it exited; gone is called then. On error nothing of it is left
// (and gone is not called).
func hostContainer(groupDir, root string, req shimproto.CreateRequest, files []*os.File, gone func()) (int, error) {
	s := &shim{dir: req.Dir, groupDir: groupDir, root: root, id: req.ID, execs: map[string]*shimExec{}, extraFiles: files}
	s.log = openContainerLog(filepath.Join(s.dir, shimproto.ShimLogFile), s.id)
	if err := s.create(); err != nil {
		s.log.Error("shim: create failed", "err", err)
		s.log.close()
		if rerr := shimproto.ReleaseShimPid(s.dir); rerr != nil {
			slog.Warn("shim: releasing the container", "id", s.id, "err", rerr)
		}
		return 0, err
	}
	go func() {
		defer gone()
		s.run()
		s.log.close()
		// Last: from now on the daemon sees no shim for this container.
		if err := shimproto.ReleaseShimPid(s.dir); err != nil {
			slog.Warn("shim: releasing the container", "id", s.id, "err", err)
		}
	}()
	s.spec = nil
	releaseMemory()
	return s.pid, nil
}

type shim struct {
	dir, root, id string
	// groupDir is the directory of the shim process hosting it.
	groupDir string
	opts     shimproto.Options
	log      *containerLog
	// extraFiles came with the create request (SCM_RIGHTS), for the
	// first process; the group closes them once create returned.
	extraFiles []*os.File
	spec       *specs.Spec

	container *libcontainer.Container
	// limits is the cgroup above the container's that holds its limits.
	limits cgroups.Manager
	// limitsRes is what the limits cgroup holds, kept for updates.
	limitsRes *cgroups.Resources
	init      *libcontainer.Process
	pid       int
	listener  net.Listener
	logw      logger.Logger
	// consolePTY is the /dev/console pty of a ConsolePTY container.
	consolePTY *consolePTY

	// stdin is the container's stdin (pipe write end, or the pty master).
	stdin     *os.File
	stdinOnce sync.Once
	console   *os.File

	out broadcaster
	// outputLeft counts the output streams still open; the last to end
	// closes outputDone.
	outputLeft atomic.Int32
	outputDone chan struct{}
	// process is the spec's process, kept for execs; the rest of the
	// spec is dropped after create (its seccomp profile alone is tens of
	// KiB, and libcontainer keeps its own copy of what it needs).
	process *specs.Process
	// waiters are OpWait connections, answered when the container exited.
	waiters []net.Conn

	mu        sync.Mutex
	started   bool
	startedAt time.Time // when the program was let run; zero before
	// initExe is libcontainer's init binary as the container's init ran
	// it: an exec's process is that binary until it execs the command.
	initExe os.FileInfo
	execs   map[string]*shimExec
	status  execdriver.ExitStatus
	exited  chan struct{} // closed once the exit is recorded and the container destroyed
	conns   sync.WaitGroup
}

// create sets up the container up to (not including) running the user's
// process. On error everything it made is undone.
func (s *shim) create() (retErr error) {
	if err := shimproto.WriteShimPid(s.dir, s.groupDir); err != nil {
		return err
	}
	if err := shimproto.ReadJSONFile(filepath.Join(s.dir, shimproto.OptionsFile), &s.opts); err != nil {
		return err
	}
	if err := shimproto.ReserveExit(s.dir); err != nil {
		return fmt.Errorf("reserving room for the exit status: %w", err)
	}
	s.spec = new(specs.Spec)
	if err := shimproto.ReadJSONFile(filepath.Join(s.dir, shimproto.SpecFile), s.spec); err != nil {
		return err
	}
	if s.spec.Process == nil {
		return errdefs.InvalidParameter(errors.New("spec has no process"))
	}
	filterSpecCaps(s.spec.Process.Capabilities)
	// The state directory is the bundle, against which a relative rootfs
	// is resolved. specconv would resolve it against the working
	// directory, which is the whole process's: the shim never changes it
	// (it hosts several containers), so the path is made absolute here
	// and the bundle label set below.
	if s.spec.Root != nil && !filepath.IsAbs(s.spec.Root.Path) {
		s.spec.Root.Path = filepath.Join(s.dir, s.spec.Root.Path)
	}
	if s.opts.ConsolePTY {
		if err := s.setupConsolePTY(); err != nil {
			return err
		}
	}
	config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName: s.id, UseSystemdCgroup: s.opts.SystemdCgroup, Spec: s.spec,
	})
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid container config: %w", err))
	}
	setBundleLabel(config, s.dir)
	config.Seccomp = sharedSeccomp(config.Seccomp)
	if err := s.createCgroups(config); err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			s.destroyLimits()
		}
	}()
	s.container, err = libcontainer.Create(s.root, s.id, config)
	if err != nil {
		if errors.Is(err, libcontainer.ErrExist) {
			return errdefs.Conflict(fmt.Errorf("container %s already exists in the runtime", s.id))
		}
		return fmt.Errorf("creating container: %w", err)
	}
	defer func() {
		if retErr != nil {
			if err := s.container.Destroy(); err != nil {
				s.log.Error("shim: destroy after failed create", "err", err)
			}
		}
	}()
	if s.logw, err = logger.New(s.opts.Log); err != nil {
		return fmt.Errorf("opening log: %w", err)
	}
	p := &libcontainer.Process{
		Args:          s.spec.Process.Args,
		Env:           s.spec.Process.Env,
		Cwd:           s.spec.Process.Cwd,
		UID:           int(s.spec.Process.User.UID),
		GID:           int(s.spec.Process.User.GID),
		Rlimits:       clampRlimits(s.spec.Process.Rlimits),
		ConsoleHeight: s.opts.ConsoleHeight,
		ConsoleWidth:  s.opts.ConsoleWidth,
		Init:          true,
		LogLevel:      initLogLevel,
		// Descriptors sent with the create request (socket activation).
		ExtraFiles: s.extraFiles,
	}
	for _, g := range s.spec.Process.User.AdditionalGids {
		p.AdditionalGroups = append(p.AdditionalGroups, int(g))
	}
	pio, err := newProcIO(p, s.opts.Tty, s.opts.OpenStdin)
	if err != nil {
		return err
	}
	if err := s.container.Start(p); err != nil {
		pio.closeAll()
		return classifyStartError(err)
	}
	s.init = p
	if err := pio.afterStart(); err != nil {
		_ = p.Signal(unix.SIGKILL)
		_, _ = p.Wait()
		return err
	}
	s.pid, _ = p.Pid()
	s.stdin, s.console = pio.stdin, pio.console
	s.process = s.spec.Process
	s.outputDone = make(chan struct{})
	s.exited = make(chan struct{})
	s.startOutput(pio)
	s.startConsole()

	if s.listener, err = shimproto.Listen(s.dir, shimproto.SocketName); err != nil {
		_ = p.Signal(unix.SIGKILL)
		_, _ = p.Wait()
		return fmt.Errorf("control socket: %w", err)
	}
	return nil
}

// startOutput copies the container's output to the log and attachers.
func (s *shim) startOutput(pio *procIO) {
	copyTo := func(r *os.File, stream string, kind byte) {
		defer func() {
			if s.outputLeft.Add(-1) == 0 {
				close(s.outputDone)
			}
		}()
		var lw io.WriteCloser
		if s.logw != nil {
			lw = s.logw.StreamWriter(stream)
			defer lw.Close()
		}
		failures := &logFailures{stream: stream, logw: s.logw, log: s.log.Logger}
		readEach(r, func(p []byte) {
			if lw != nil {
				failures.write(lw, p)
			}
			s.out.send(kind, p)
		})
	}
	outs := pio.outputs()
	if len(outs) == 0 {
		close(s.outputDone)
		return
	}
	s.outputLeft.Store(int32(len(outs)))
	for _, o := range outs {
		go copyTo(o.f, o.stream, o.kind)
	}
}

// run serves the control socket until the container exited, then cleans
// up: exit recorded, container destroyed, socket closed.
func (s *shim) run() {
	go s.serve()
	awaitExit(s.pid)
	ps, werr := s.init.Wait()
	st := execdriver.ExitStatus{Code: exitCode(ps, werr), ExitedAt: time.Now().UTC()}
	s.log.Info("shim: container exited", "code", st.Code)

	select {
	case <-s.outputDone:
	case <-time.After(drainTimeout):
		s.log.Warn("shim: output did not reach EOF; dropping the rest")
	}
	s.stopConsole()
	s.out.end()
	if s.logw != nil {
		if err := s.logw.Close(); err != nil {
			s.log.Warn("shim: closing log", "err", err)
		}
		if n, _ := dropped(s.logw); n > 0 {
			s.log.Warn("shim: log entries were dropped", "count", n)
		}
	}
	st.OOMKilled = s.oomKilled()
	if err := shimproto.WriteExit(s.dir, st); err != nil {
		s.log.Error("shim: recording exit status", "err", err)
	}
	s.destroy()

	s.mu.Lock()
	s.status = st
	waiters := s.waiters
	s.waiters = nil
	close(s.exited)
	s.mu.Unlock()
	for _, c := range waiters {
		// Answered here, not by a goroutine per waiter; closing the
		// connection ends its handler.
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_ = shimproto.WriteJSONLine(c, shimproto.Response{Exit: &st})
		c.Close()
	}
	s.listener.Close()
	_ = os.Remove(filepath.Join(s.dir, shimproto.SocketName))

	// Give waiters and exec sessions a moment to get their answers out.
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// createCgroups makes the limits cgroup and leaves libcontainer the
// payload cgroup below it (see cgroups.go), and confines the container's
// view of the cgroup filesystem. The payload keeps a copy of the limits:
// programs in the container (a JVM sizing its heap, a runtime counting
// CPUs) read them from their own cgroup, as in Docker. The copy is only for
// them to read: the container cannot write it either (read-only
// controllers on v1, the namespace root's files on v2) unless it asked for
// writable cgroups, and whatever happened to it, the limits cgroup above
// still holds.
func (s *shim) createCgroups(config *configs.Config) error {
	limits, err := shimproto.LimitsCgroup(s.spec.Linux.CgroupsPath, s.opts.SystemdCgroup, config.Cgroups.Resources)
	if err != nil {
		return errdefs.InvalidParameter(err)
	}
	payload, err := shimproto.PayloadRelPath(s.spec.Linux.CgroupsPath, s.opts.SystemdCgroup)
	if err != nil {
		return errdefs.InvalidParameter(err)
	}
	if s.limits, err = createLimits(limits); err != nil {
		return err
	}
	s.limitsRes = limits.Resources
	privileged := slices.Contains(s.spec.Process.Capabilities.Bounding, "CAP_SYS_ADMIN")
	allControllers := s.spec.Annotations[oci.CgroupsAnnotation] == oci.CgroupsWritable
	confine := confineCgroupMount
	if s.spec.Annotations[oci.CgroupLayoutAnnotation] == oci.CgroupLayoutUnified {
		confine = unifiedCgroupMount
	}
	if err := confine(config, payload, privileged, allControllers); err != nil {
		s.destroyLimits()
		return err
	}
	return nil
}

// destroyLimits removes the limits cgroup, once the payload is gone.
func (s *shim) destroyLimits() {
	if s.limits == nil {
		return
	}
	if err := s.limits.Destroy(); err != nil {
		s.log.Warn("shim: removing the limits cgroup", "err", err)
	}
}

// destroy removes the container's cgroups and runtime state; processes
// that outlived init (only possible without a pid namespace) are killed.
func (s *shim) destroy() {
	defer s.destroyLimits()
	for i := 0; i < 50; i++ {
		err := s.container.Destroy()
		if err == nil {
			return
		}
		if i == 0 {
			_ = s.container.Signal(unix.SIGKILL)
		}
		if i == 49 {
			s.log.Error("shim: destroying container", "err", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// oomKilled reports whether the kernel's OOM killer struck in the
// container's memory cgroup (v1 memory.oom_control or v2 memory.events).
func (s *shim) oomKilled() bool {
	// On v2 memory.events counts kills in the whole subtree, so the limits
	// cgroup's file says it; on v1 a kill is counted only in the victim's
	// own cgroup, which is the payload (its memory hierarchy is read-only
	// to the container, which cannot make sub-cgroups there).
	var files []string
	if s.limits != nil {
		if p := s.limits.Path(""); p != "" && cgroups.IsCgroup2UnifiedMode() {
			files = append(files, filepath.Join(p, "memory.events"))
		}
		if p := s.limits.Path("memory"); p != "" {
			files = append(files, filepath.Join(p, "memory.oom_control"))
		}
	}
	if st, err := s.container.State(); err == nil {
		if p, ok := st.CgroupPaths["memory"]; ok {
			files = append(files, filepath.Join(p, "memory.oom_control"))
		}
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
				return true
			}
		}
	}
	return false
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		slog.Error("shim: waiting for init", "err", err)
		return 255
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// classifyStartError is the one place where a failure to start a process
// (the container's or an exec's) is classified: libcontainer's init
// reports them as text from inside the container, so this is where that
// text is read. A process that could not be found is exit code 127, one
// that could not be executed 126, both caused by the container's own
// configuration (invalid parameters); anything else is the engine's
// failure, 125. The daemon reads the result from StartError's fields.
func classifyStartError(err error) error {
	msg := err.Error()
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("executable file not found", "no such file or directory"):
		return errdefs.InvalidParameter(&execdriver.StartError{Code: 127, Err: err})
	case has("permission denied", "exec format error", "is a directory", "not a directory"):
		return errdefs.InvalidParameter(&execdriver.StartError{Code: 126, Err: err})
	case has("chdir to cwd", "unable to find user"):
		return errdefs.InvalidParameter(&execdriver.StartError{Code: 125, Err: err})
	}
	return &execdriver.StartError{Code: 125, Err: err}
}

// catchSignals makes the shim survive stray signals (SIGHUP by mistake,
// SIGPIPE when a client goes away mid-write) by catching and dropping
// them. Catching, not ignoring: an ignored disposition is inherited across
// exec by the container's processes, and a shell there then cannot trap
// the signal (POSIX); a caught one is reset to the default at exec. This
// also undoes ignores the shim itself inherited from whoever started the
// daemon (nohup, a job-control shell).
func catchSignals() {
	var sigs []os.Signal
	for sig := unix.Signal(1); sig < 32; sig++ {
		switch sig {
		case unix.SIGKILL, unix.SIGSTOP, unix.SIGCHLD, unix.SIGSEGV, unix.SIGBUS,
			unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGURG, unix.SIGPROF:
			continue
		}
		sigs = append(sigs, sig)
	}
	signal.Notify(make(chan os.Signal, 1), sigs...)
}
