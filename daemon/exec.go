package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/pkg/stringid"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
)

// execConfig is one `docker exec` instance.
type execConfig struct {
	mu          sync.Mutex
	id          string
	containerID string
	opts        containertypes.ExecOptions
	// uid, gid and groups are the process's user, resolved at create in
	// the container's /etc/passwd and /etc/group (with --group-add).
	uid, gid uint32
	groups   []uint32
	started  bool
	running  bool
	exitCode *int
	pid      int
	proc     execdriver.Process
}

// ExecCreate registers an exec instance in a running container.
func (d *Daemon) ExecCreate(ctx context.Context, name string, opts *containertypes.ExecOptions) (string, error) {
	c, err := d.containers.Get(name)
	if err != nil {
		return "", err
	}
	uid, gid, groups, err := d.execUser(c, opts.User)
	if err != nil {
		return "", err
	}
	e := &execConfig{id: stringid.GenerateRandomID(), containerID: c.ID, opts: *opts, uid: uid, gid: gid, groups: groups}
	d.mu.Lock()
	d.execs[e.id] = e
	d.mu.Unlock()
	d.containerEvent(c, eventtypes.Action(string(eventtypes.ActionExecCreate)+": "+strings.Join(opts.Cmd, " ")), map[string]string{"execID": e.id})
	return e.id, nil
}

// execUser resolves the user an exec runs as (user, else the container's)
// in a running container, with the container's --group-add groups, as
// Docker does. The user is resolved here, once: a user or group the
// container does not have is the request's fault, told at create as Docker
// does (400), not only as the exec's output once it is started.
func (d *Daemon) execUser(c *container.Container, user string) (uid, gid uint32, groups []uint32, err error) {
	c.Lock()
	running := c.State.Running()
	rootfs := c.BaseFS
	if user == "" {
		user = c.Config.User
	}
	var groupAdd []string
	if c.HostConfig != nil {
		groupAdd = slices.Clone(c.HostConfig.GroupAdd)
	}
	paused := c.State.Status == container.StatusPaused
	fromImage := imageGroups(c)
	c.Unlock()
	if !running {
		return 0, 0, nil, errdefs.Conflict(fmt.Errorf("container %s is not running", c.ID))
	}
	if paused {
		return 0, 0, nil, errdefs.Conflict(fmt.Errorf("Container %s is paused, unpause the container before exec", c.ID))
	}
	if rootfs == "" {
		// A record written before BaseFS existed: the mount is idempotent.
		if rootfs, err = d.images.Mount(c.ID); err != nil {
			return 0, 0, nil, err
		}
	}
	uid, gid, groups, err = oci.ResolveUserGroups(rootfs, user, groupAdd, fromImage)
	if err != nil && !errdefs.IsInvalidParameter(err) {
		err = errdefs.InvalidParameter(err)
	}
	return uid, gid, groups, err
}

func (d *Daemon) getExec(id string) (*execConfig, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.execs[id]
	if !ok {
		return nil, errdefs.NotFound(fmt.Errorf("No such exec instance: %s", id))
	}
	return e, nil
}

// ExecStart runs the exec instance; with out == nil it runs detached.
//
// As in Docker, an attached start takes over the connection first and
// does everything else after: what fails then (the container stopped,
// the runtime refusing the process) is written on the stream, where the
// client shows it, and the exec's exit code is 126. Answering an upgrade
// request with an HTTP error would leave the client only "unable to
// upgrade to tcp, received 400". Only an unknown exec is an HTTP error (404), as in Docker.
func (d *Daemon) ExecStart(ctx context.Context, id string, startOpts containertypes.ExecStartOptions, out backend.StreamFunc) error {
	e, err := d.getExec(id)
	if err != nil {
		return err
	}
	var streams execdriver.Streams
	var conn io.Closer
	if out != nil && !startOpts.Detach {
		// The start request's Tty says how the stream is framed (raw, or
		// stdcopy frames), as in Docker; the create request's says whether
		// the process gets a terminal. A client may ask for frames around
		// a terminal's output.
		stdin, stdout, stderr, err := out(startOpts.Tty)
		if err != nil {
			return err
		}
		conn = stdin
		if e.opts.AttachStdin {
			streams.Stdin = io.NopCloser(stdin)
		}
		if e.opts.AttachStdout {
			streams.Stdout = stdout
		}
		if e.opts.AttachStderr {
			streams.Stderr = stderr
		}
	}
	proc, err := d.startExec(ctx, e, startOpts, streams)
	if err != nil {
		if conn == nil {
			return err
		}
		// Said on stderr if the client attached it, else on stdout.
		if w := streams.Stderr; w != nil {
			fmt.Fprintf(w, "%v\n", err)
		} else if w := streams.Stdout; w != nil {
			fmt.Fprintf(w, "%v\n", err)
		}
		conn.Close()
		return nil
	}
	wait := func() {
		code, err := proc.Wait(context.Background())
		if err != nil {
			slog.Debug("exec wait", "exec", id, "err", err)
			code = 126
		}
		e.mu.Lock()
		e.running = false
		e.exitCode = &code
		e.mu.Unlock()
		if c, err := d.containers.Get(e.containerID); err == nil {
			d.containerEvent(c, eventtypes.ActionExecDie, map[string]string{"execID": e.id, "exitCode": strconv.Itoa(code)})
		}
	}
	if conn == nil {
		go wait()
		return nil
	}
	wait()
	conn.Close()
	return nil
}

// startExec starts e's process with the given streams. Once e is marked
// started, a failure is recorded as its exit code: 126 (Docker's for an
// exec that could not run) unless the runtime says 127 (not found).
func (d *Daemon) startExec(ctx context.Context, e *execConfig, startOpts containertypes.ExecStartOptions, streams execdriver.Streams) (_ execdriver.Process, retErr error) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return nil, errdefs.Conflict(fmt.Errorf("exec instance %s has already been started", e.id))
	}
	e.started = true
	e.mu.Unlock()
	defer func() {
		if retErr != nil {
			code := 126
			if c := execdriver.StartExitCode(retErr); c != 125 {
				code = c
			}
			e.mu.Lock()
			e.exitCode = &code
			e.mu.Unlock()
		}
	}()

	c, err := d.containers.Get(e.containerID)
	if err != nil {
		return nil, err
	}
	task := d.task(c.ID)
	if task == nil {
		return nil, errdefs.Conflict(fmt.Errorf("container %s is not running", c.ID))
	}
	c.Lock()
	p := execProcess(c, e)
	c.Unlock()
	xo := execdriver.ExecOptions{
		Args: p.Args, Env: p.Env, Cwd: p.Cwd, UID: p.UID, GID: p.GID, AdditionalGids: p.AdditionalGids,
		Tty: p.Tty, Privileged: e.opts.Privileged, Streams: streams,
	}
	if e.opts.Tty {
		xo.ConsoleHeight, xo.ConsoleWidth = execConsoleSize(e.opts.ConsoleSize, startOpts.ConsoleSize)
	}
	proc, err := task.Exec(context.WithoutCancel(ctx), xo)
	if err != nil {
		return nil, fmt.Errorf("OCI runtime exec failed: %w", err)
	}
	e.mu.Lock()
	e.proc, e.running, e.pid = proc, true, proc.Pid()
	e.mu.Unlock()
	d.containerEvent(c, eventtypes.Action(string(eventtypes.ActionExecStart)+": "+strings.Join(e.opts.Cmd, " ")), map[string]string{"execID": e.id})
	return proc, nil
}

// execProcess is e's process in the running c, made as the container's
// first process is (processSpec): the container's environment with e's
// over it, e's working directory, else the container's, else "/". The
// caller holds c's lock.
func execProcess(c *container.Container, e *execConfig) process {
	return processSpec(c, execHostname(c), process{
		Args: e.opts.Cmd, Env: e.opts.Env, Cwd: e.opts.WorkingDir,
		UID: e.uid, GID: e.gid, AdditionalGids: e.groups, Tty: e.opts.Tty,
	})
}

// ExecInspect reports an exec instance.
func (d *Daemon) ExecInspect(ctx context.Context, id string) (*backend.ExecInspect, error) {
	e, err := d.getExec(id)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &backend.ExecInspect{
		ID: e.id, Running: e.running, ExitCode: e.exitCode, ContainerID: e.containerID, Pid: e.pid,
		OpenStdin: e.opts.AttachStdin, OpenStdout: e.opts.AttachStdout, OpenStderr: e.opts.AttachStderr,
		DetachKeys: e.opts.DetachKeys, CanRemove: !e.running && e.started,
	}
	r.ProcessConfig.Tty = e.opts.Tty
	r.ProcessConfig.Privileged = e.opts.Privileged
	r.ProcessConfig.User = e.opts.User
	if len(e.opts.Cmd) > 0 {
		r.ProcessConfig.Entrypoint = e.opts.Cmd[0]
		r.ProcessConfig.Arguments = e.opts.Cmd[1:]
	}
	return r, nil
}

// ExecResize sets an exec's tty size.
func (d *Daemon) ExecResize(ctx context.Context, id string, height, width uint) error {
	e, err := d.getExec(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	proc := e.proc
	e.mu.Unlock()
	if proc == nil {
		return errdefs.Conflict(fmt.Errorf("exec %s is not running", id))
	}
	return proc.Resize(clampTTY(height), clampTTY(width))
}

func (d *Daemon) execIDs(containerID string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	for id, e := range d.execs {
		if e.containerID == containerID {
			ids = append(ids, id)
		}
	}
	return ids
}

func (d *Daemon) forgetExecs(containerID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, e := range d.execs {
		if e.containerID == containerID {
			delete(d.execs, id)
		}
	}
}

// execConsoleSize is the terminal size an exec starts with: the start
// request's if it gave one, else the create request's, else none (0, 0).
// A side too large for a terminal is clamped, not wrapped.
func execConsoleSize(created, started *[2]uint) (height, width uint16) {
	cs := created
	if started != nil {
		cs = started
	}
	if cs == nil {
		return 0, 0
	}
	return clampTTY(cs[0]), clampTTY(cs[1])
}

// clampTTY fits a terminal dimension into the uint16 a winsize holds.
func clampTTY(n uint) uint16 {
	if n > math.MaxUint16 {
		return math.MaxUint16
	}
	return uint16(n)
}
