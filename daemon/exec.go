package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stringid"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/runconfig"
)

// execConfig is one `docker exec` instance.
type execConfig struct {
	mu          sync.Mutex
	id          string
	containerID string
	opts        containertypes.ExecOptions
	started     bool
	running     bool
	exitCode    *int
	pid         int
	proc        execdriver.Process
}

// ExecCreate registers an exec instance in a running container.
func (d *Daemon) ExecCreate(ctx context.Context, name string, opts *containertypes.ExecOptions) (string, error) {
	c, err := d.containers.Get(name)
	if err != nil {
		return "", err
	}
	c.Lock()
	running := c.State.Running()
	c.Unlock()
	if !running {
		return "", errdefs.Conflict(fmt.Errorf("container %s is not running", c.ID))
	}
	e := &execConfig{id: stringid.GenerateRandomID(), containerID: c.ID, opts: *opts}
	d.mu.Lock()
	d.execs[e.id] = e
	d.mu.Unlock()
	return e.id, nil
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
func (d *Daemon) ExecStart(ctx context.Context, id string, startOpts containertypes.ExecStartOptions, out backend.StreamFunc) error {
	e, err := d.getExec(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errdefs.Conflict(fmt.Errorf("exec instance %s has already been started", id))
	}
	e.started = true
	e.mu.Unlock()

	c, err := d.containers.Get(e.containerID)
	if err != nil {
		return err
	}
	task := d.task(c.ID)
	if task == nil {
		return errdefs.Conflict(fmt.Errorf("container %s is not running", c.ID))
	}
	c.Lock()
	user := e.opts.User
	if user == "" {
		user = c.Config.User
	}
	cwd := e.opts.WorkingDir
	if cwd == "" {
		cwd = c.Config.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	hostname := c.Config.Hostname
	if hostname == "" {
		hostname = c.ShortID()
	}
	env := runconfig.MergeEnv(containerEnv(c, hostname), e.opts.Env)
	rootfs := c.BaseFS
	c.Unlock()
	if rootfs == "" {
		// A record written before BaseFS existed: the mount is idempotent.
		if rootfs, err = d.images.Mount(c.ID); err != nil {
			return err
		}
	}
	uid, gid, groups, err := oci.ResolveUser(rootfs, user)
	if err != nil {
		return err
	}
	tty := e.opts.Tty || startOpts.Tty
	xo := execdriver.ExecOptions{
		Args: e.opts.Cmd, Env: env, Cwd: cwd, UID: uid, GID: gid, AdditionalGids: groups,
		Tty: tty, Privileged: e.opts.Privileged,
	}
	if cs := e.opts.ConsoleSize; cs != nil {
		xo.ConsoleHeight, xo.ConsoleWidth = uint16(cs[0]), uint16(cs[1])
	}
	var conn io.Closer
	if out != nil && !startOpts.Detach {
		stdin, stdout, stderr, err := out(tty)
		if err != nil {
			return err
		}
		conn = stdin
		if e.opts.AttachStdin {
			xo.Streams.Stdin = io.NopCloser(stdin)
		}
		if e.opts.AttachStdout {
			xo.Streams.Stdout = stdout
		}
		if e.opts.AttachStderr {
			xo.Streams.Stderr = stderr
		}
	}
	proc, err := task.Exec(context.WithoutCancel(ctx), xo)
	if err != nil {
		code := execdriver.StartExitCode(err)
		if code == 125 {
			// Docker reports an exec the runtime could not start as 126.
			code = 126
		}
		e.mu.Lock()
		e.exitCode = &code
		e.mu.Unlock()
		if conn != nil {
			// The stream is already hijacked: say why on it, as Docker does.
			if xo.Streams.Stderr != nil {
				fmt.Fprintf(xo.Streams.Stderr, "OCI runtime exec failed: %v\n", err)
			} else if xo.Streams.Stdout != nil {
				fmt.Fprintf(xo.Streams.Stdout, "OCI runtime exec failed: %v\n", err)
			}
			conn.Close()
			return nil
		}
		return err
	}
	e.mu.Lock()
	e.proc, e.running, e.pid = proc, true, proc.Pid()
	e.mu.Unlock()
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
	}
	if conn == nil {
		go wait()
		return nil
	}
	wait()
	conn.Close()
	return nil
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
	return proc.Resize(uint16(height), uint16(width))
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
