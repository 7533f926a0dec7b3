package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/signal"
)

const defaultStopTimeout = 10

// stopSignal is what `docker stop` sends first: the user's, the image's,
// the init profile's, or SIGTERM.
func stopSignal(c *container.Container) syscall.Signal {
	if c.Config.StopSignal != "" {
		if sig, err := signal.Parse(c.Config.StopSignal); err == nil {
			return sig
		}
	}
	return syscall.SIGTERM
}

// ContainerStop sends the stop signal, then SIGKILL after the timeout.
func (d *Daemon) ContainerStop(ctx context.Context, name string, opts containertypes.StopOptions) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	return d.stop(ctx, c, opts.Signal, opts.Timeout)
}

func (d *Daemon) stop(ctx context.Context, c *container.Container, sigName string, timeout *int) error {
	c.Lock()
	if !c.State.Running() {
		c.Unlock()
		return errdefs.NotModified(fmt.Errorf("container %s is not running", c.ID))
	}
	sig := stopSignal(c)
	if sigName != "" {
		s, err := signal.Parse(sigName)
		if err != nil {
			c.Unlock()
			return err
		}
		sig = s
	}
	secs := defaultStopTimeout
	if c.Config.StopTimeout != nil {
		secs = *c.Config.StopTimeout
	}
	if timeout != nil {
		secs = *timeout
	}
	exited := c.ExitChan()
	c.Unlock()

	task := d.task(c.ID)
	if task == nil {
		return errdefs.Conflict(fmt.Errorf("container %s is not running", c.ID))
	}
	slog.Debug("stopping container", "id", c.ID, "signal", signal.Name(sig), "timeout", secs)
	if err := task.Signal(sig); err != nil {
		slog.Debug("stop signal not delivered", "id", c.ID, "err", err)
	}
	if secs >= 0 {
		select {
		case <-exited:
			return nil
		case <-time.After(time.Duration(secs) * time.Second):
			slog.Info("container did not stop in time; killing it", "id", c.ID, "signal", signal.Name(sig), "timeout", secs)
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := task.Signal(syscall.SIGKILL); err != nil {
			slog.Debug("SIGKILL not delivered", "id", c.ID, "err", err)
		}
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ContainerRestart stops the container (if running) and starts it again.
func (d *Daemon) ContainerRestart(ctx context.Context, name string, opts containertypes.StopOptions) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	if err := d.stop(ctx, c, opts.Signal, opts.Timeout); err != nil && !errdefs.IsNotModified(err) {
		return err
	}
	return d.ContainerStart(ctx, c.ID)
}

// ContainerKill sends a signal (SIGKILL by default) to the container.
func (d *Daemon) ContainerKill(ctx context.Context, name, sigName string) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	sig := syscall.SIGKILL
	if sigName != "" {
		if sig, err = signal.Parse(sigName); err != nil {
			return err
		}
	}
	c.Lock()
	running := c.State.Running()
	exited := c.ExitChan()
	c.Unlock()
	task := d.task(c.ID)
	if !running || task == nil {
		return errdefs.Conflict(fmt.Errorf("cannot kill container: %s: container %s is not running", name, c.ID))
	}
	if err := task.Signal(sig); err != nil {
		return fmt.Errorf("cannot kill container: %s: %w", name, err)
	}
	if sig == syscall.SIGKILL {
		// Docker returns from a SIGKILL once the container is gone.
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
		}
	}
	return nil
}

// ContainerWait blocks until the condition holds and reports the exit.
func (d *Daemon) ContainerWait(ctx context.Context, name string, cond containertypes.WaitCondition) (<-chan containertypes.WaitResponse, error) {
	c, err := d.containers.Get(name)
	if err != nil {
		return nil, err
	}
	c.Lock()
	running := c.State.Running()
	exited := c.ExitChan()
	removed := c.RemovedChan()
	c.Unlock()
	result := func() containertypes.WaitResponse {
		c.Lock()
		defer c.Unlock()
		resp := containertypes.WaitResponse{StatusCode: int64(c.State.ExitCode)}
		if c.State.Error != "" {
			resp.Error = &containertypes.WaitExitError{Message: c.State.Error}
		}
		return resp
	}
	ch := make(chan containertypes.WaitResponse, 1)
	if cond == containertypes.WaitConditionNotRunning && !running {
		ch <- result()
		return ch, nil
	}
	go func() {
		var done <-chan struct{} = exited
		if cond == containertypes.WaitConditionRemoved {
			done = removed
		}
		select {
		case <-done:
			ch <- result()
		case <-ctx.Done():
		}
	}()
	return ch, nil
}

// ContainerRemove deletes a stopped container (a running one with force).
func (d *Daemon) ContainerRemove(ctx context.Context, name string, opts containertypes.RemoveOptions) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	if opts.RemoveLinks {
		return errdefs.NotImplemented(fmt.Errorf("links are not implemented by this engine"))
	}
	c.Lock()
	running := c.State.Running()
	c.Unlock()
	if running {
		if !opts.Force {
			return errdefs.Conflict(fmt.Errorf("cannot remove container %q: container is running: stop the container before removing or force remove", c.Name))
		}
		if err := d.ContainerKill(ctx, c.ID, "KILL"); err != nil && !errdefs.IsConflict(err) {
			return err
		}
	}
	return d.remove(c, opts.Force)
}

// remove releases everything the container holds on disk.
func (d *Daemon) remove(c *container.Container, force bool) error {
	c.Lock()
	defer c.Unlock()
	switch c.State.Status {
	case container.StatusRunning:
		return errdefs.Conflict(fmt.Errorf("cannot remove container %q: container is running", c.Name))
	case container.StatusRemoving:
		if !force {
			return errdefs.Conflict(fmt.Errorf("removal of container %s is already in progress", c.ID))
		}
	}
	c.State.Status = container.StatusRemoving
	if err := d.images.Unmount(c.ID); err != nil {
		slog.Debug("unmount before remove", "id", c.ID, "err", err)
	}
	if err := d.driver.Delete(c.ID); err != nil {
		slog.Debug("exec driver state before remove", "id", c.ID, "err", err)
	}
	if err := d.images.RemoveRWLayer(c.ID); err != nil {
		c.State.Status = container.StatusDead
		_ = c.SaveLocked()
		return fmt.Errorf("remove container layer: %w", err)
	}
	if err := removeJournal(c); err != nil {
		slog.Error("remove container journal", "id", c.ID, "err", err)
	}
	if err := os.RemoveAll(c.Root); err != nil {
		c.State.Status = container.StatusDead
		return fmt.Errorf("remove container dir: %w", err)
	}
	d.containers.Remove(c)
	d.forgetExecs(c.ID)
	d.failPending(c.ID, errdefs.NotFound(fmt.Errorf("container %s was removed", c.ID)))
	c.NotifyRemoved()
	return nil
}
