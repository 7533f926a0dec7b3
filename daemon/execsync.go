package daemon

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"time"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/docker/docker/pkg/stringid"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/execdriver"
)

// ContainerExecSync runs cmd in a running container as its own user, in
// its working directory and environment, and waits for it: a health probe,
// or a CRI ExecSync. After timeout (0: none) or when ctx ends, the process
// is killed and reaped, never left behind; timedOut says which.
func (d *Daemon) ContainerExecSync(ctx context.Context, name string, cmd []string, timeout time.Duration, stdout, stderr io.Writer) (code int, timedOut bool, err error) {
	c, err := d.containers.Get(name)
	if err != nil {
		return -1, false, err
	}
	return d.execSync(ctx, c, cmd, timeout, stdout, stderr)
}

func (d *Daemon) execSync(ctx context.Context, c *container.Container, cmd []string, timeout time.Duration, stdout, stderr io.Writer) (int, bool, error) {
	uid, gid, groups, err := d.execUser(c, "")
	if err != nil {
		return -1, false, err
	}
	e := &execConfig{id: stringid.GenerateRandomID(), containerID: c.ID, uid: uid, gid: gid, groups: groups, opts: containertypes.ExecOptions{
		Cmd: cmd, AttachStdout: true, AttachStderr: true,
	}}
	proc, err := d.startExec(ctx, e, containertypes.ExecStartOptions{}, execdriver.Streams{Stdout: stdout, Stderr: stderr})
	if err != nil {
		return -1, false, err
	}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := proc.Wait(context.Background())
		done <- result{code, err}
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	timedOut := false
	select {
	case r := <-done:
		return r.code, false, r.err
	case <-ctx.Done():
	case <-expired:
		timedOut = true
	}
	if err := proc.Signal(syscall.SIGKILL); err != nil {
		slog.Debug("kill exec", "id", c.ID, "err", err)
	}
	// Its output is complete once Wait returned.
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		slog.Warn("exec did not exit after SIGKILL", "id", c.ID)
	}
	if timedOut {
		return -1, true, nil
	}
	return -1, false, ctx.Err()
}
