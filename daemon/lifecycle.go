package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/internal/crashpoint"
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
	d.mu.Lock()
	shutdown := d.closing
	d.mu.Unlock()
	c.Lock()
	// A stop is never undone by the restart policy; one by the daemon's
	// shutdown is not the user's (unless-stopped comes back with the
	// daemon).
	if c.State.Running() || c.State.Restarting() {
		if !shutdown {
			c.HasBeenManuallyStopped = true
		}
		c.RestartManager().Cancel()
	}
	if c.State.Restarting() {
		// Nothing runs: cancelling the pending restart is the stop.
		exited := c.ExitChan()
		if err := c.SaveLocked(); err != nil {
			slog.Error("save stopped container", "id", c.ID, "err", err)
		}
		c.Unlock()
		select {
		case <-exited:
		case <-ctx.Done():
			return ctx.Err()
		}
		d.containerEvent(c, eventtypes.ActionStop, nil)
		return nil
	}
	if !c.State.Running() {
		c.Unlock()
		return errdefs.NotModified(fmt.Errorf("container %s is not running", c.ID))
	}
	if err := c.SaveLocked(); err != nil {
		slog.Error("save stopping container", "id", c.ID, "err", err)
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
	// Read together under the lock: a running container has its task
	// until its exit is recorded, and the exit closes this channel.
	exited := c.ExitChan()
	task := d.task(c.ID)
	c.Unlock()

	if task == nil {
		// Only a live-restore shutdown leaves a running container
		// without its task.
		return errdefs.Unavailable(fmt.Errorf("container %s is not managed by this daemon any more", c.ID))
	}
	slog.Debug("stopping container", "id", c.ID, "signal", signal.Name(sig), "timeout", secs)
	d.containerEvent(c, eventtypes.ActionKill, map[string]string{"signal": strconv.Itoa(int(sig))})
	if err := task.Signal(sig); err != nil {
		// It may be exiting on its own: its exit is being recorded and
		// closes exited; otherwise the SIGKILL below follows.
		slog.Debug("stop signal not delivered", "id", c.ID, "err", err)
	}
	d.thawIfPaused(c, task)
	crashpoint.Hit("stop-after-signal")
	// Once signalled, the stop runs to its end whatever becomes of the
	// request, as in Docker: a client that goes away (or times out) must
	// not leave the container signalled but never killed.
	done := make(chan error, 1)
	go func() {
		if secs >= 0 {
			select {
			case <-exited:
				done <- nil
				return
			case <-time.After(time.Duration(secs) * time.Second):
				slog.Info("container did not stop in time; killing it", "id", c.ID, "signal", signal.Name(sig), "timeout", secs)
			}
			if err := task.Signal(syscall.SIGKILL); err != nil {
				slog.Debug("SIGKILL not delivered", "id", c.ID, "err", err)
			}
			d.thawIfPaused(c, task)
			select {
			case <-exited:
				done <- nil
			case <-time.After(killTimeout):
				done <- fmt.Errorf("container %s did not exit %s after SIGKILL", c.ID, killTimeout)
			}
			return
		}
		<-exited // a negative timeout waits for the exit, as Docker's
		done <- nil
	}()
	select {
	case err := <-done:
		if err == nil {
			d.containerEvent(c, eventtypes.ActionStop, nil)
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ContainerRestart stops the container (if running) and starts it again.
// The restart is carried out even if the request is cancelled (Docker's
// behaviour since 25.0), and the exit it causes does not remove an
// auto-remove container.
func (d *Daemon) ContainerRestart(ctx context.Context, name string, opts containertypes.StopOptions) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		done <- d.restart(context.WithoutCancel(ctx), c, opts)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Daemon) restart(ctx context.Context, c *container.Container, opts containertypes.StopOptions) error {
	c.Lock()
	c.ManualRestart = true
	c.Unlock()
	defer func() {
		c.Lock()
		c.ManualRestart = false
		c.Unlock()
	}()
	if err := d.stop(ctx, c, opts.Signal, opts.Timeout); err != nil && !errdefs.IsNotModified(err) {
		return err
	}
	if err := d.ContainerStart(ctx, c.ID); err != nil {
		return err
	}
	d.containerEvent(c, eventtypes.ActionRestart, nil)
	return nil
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
	restarting := c.State.Restarting()
	// The container's own stop signal (or SIGKILL, or any signal when it
	// has none of its own) ends the restart policy for this run, as in
	// Docker; another signal leaves it: the container may die of it and
	// be restarted.
	if running || restarting {
		own := stopSignal(c)
		if c.Config.StopSignal == "" || sig == syscall.SIGKILL || sig == own {
			c.RestartManager().Cancel()
		}
	}
	exited := c.ExitChan()
	task := d.task(c.ID)
	c.Unlock()
	if restarting {
		d.containerEvent(c, eventtypes.ActionKill, map[string]string{"signal": strconv.Itoa(int(sig))})
		return nil
	}
	if !running || task == nil {
		return errdefs.Conflict(fmt.Errorf("cannot kill container: %s: container %s is not running", name, c.ID))
	}
	d.containerEvent(c, eventtypes.ActionKill, map[string]string{"signal": strconv.Itoa(int(sig))})
	if err := task.Signal(sig); err != nil {
		if errdefs.IsConflict(err) {
			return errdefs.Conflict(fmt.Errorf("cannot kill container: %s: container %s is not running", name, c.ID))
		}
		return fmt.Errorf("cannot kill container: %s: %w", name, err)
	}
	d.thawIfPaused(c, task)
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
	current := container.Exit{Code: c.State.ExitCode, Error: c.State.Error}
	next := c.NextExit()
	removed := c.RemovedChan()
	c.Unlock()
	result := func(e *container.Exit) containertypes.WaitResponse {
		resp := containertypes.WaitResponse{StatusCode: int64(e.Code)}
		if e.Error != "" {
			resp.Error = &containertypes.WaitExitError{Message: e.Error}
		}
		return resp
	}
	ch := make(chan containertypes.WaitResponse, 1)
	if cond == containertypes.WaitConditionNotRunning && !running {
		ch <- result(&current)
		return ch, nil
	}
	go func() {
		if cond == containertypes.WaitConditionRemoved {
			select {
			case <-removed:
				// the last exit's status: a removal does not change it
				c.Lock()
				last := container.Exit{Code: c.State.ExitCode, Error: c.State.Error}
				c.Unlock()
				ch <- result(&last)
			case <-ctx.Done():
			}
			return
		}
		select {
		case <-next.Done():
			ch <- result(next)
		case <-ctx.Done():
		}
	}()
	return ch, nil
}

// killTimeout bounds how long a forced removal waits for the container's
// exit after SIGKILL.
const killTimeout = 30 * time.Second

// ContainerRemove deletes a stopped container (a running one with force).
// Removals of one container are serialised as Docker does: while one runs,
// another is refused with "removal of container X is already in progress"
// (409); once it is done the container is "No such container" (404).
func (d *Daemon) ContainerRemove(ctx context.Context, name string, opts containertypes.RemoveOptions) error {
	if opts.RemoveLinks {
		return d.removeLink(name)
	}
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	if c.SetRemovalInProgress() {
		return errdefs.Conflict(fmt.Errorf("removal of container %s is already in progress", name))
	}
	defer c.ResetRemovalInProgress()
	if c.RootfsHeld() {
		return errdefs.Conflict(fmt.Errorf("cannot remove container %q: its filesystem is being exported: try again once that is done", c.Name))
	}
	if !d.containers.Registered(c.ID) {
		// Another removal finished between our lookup and our mark: as
		// Docker, that is not an error.
		return nil
	}
	c.Lock()
	running := c.State.Running()
	restarting := c.State.Restarting()
	c.Unlock()
	if restarting && !opts.Force {
		return errdefs.Conflict(fmt.Errorf("cannot remove container %q: container is restarting: stop the container before removing or force remove", c.Name))
	}
	if running || restarting {
		if !opts.Force {
			return errdefs.Conflict(fmt.Errorf("cannot remove container %q: container is running: stop the container before removing or force remove", c.Name))
		}
		if err := d.killAndWait(ctx, c); err != nil {
			return fmt.Errorf("cannot remove container %q: could not kill container: %w", c.Name, err)
		}
	}
	return d.remove(c, opts.RemoveVolumes)
}

// killAndWait sends SIGKILL and returns once the exit is recorded.
func (d *Daemon) killAndWait(ctx context.Context, c *container.Container) error {
	c.Lock()
	if c.State.Running() || c.State.Restarting() {
		c.RestartManager().Cancel()
	}
	if c.State.Restarting() {
		exited := c.ExitChan()
		c.Unlock()
		select {
		case <-exited:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	running := c.State.Running()
	exited := c.ExitChan()
	task := d.task(c.ID)
	c.Unlock()
	if !running {
		return nil
	}
	if task == nil {
		return errdefs.Unavailable(fmt.Errorf("container %s is not managed by this daemon any more", c.ID))
	}
	if err := task.Signal(syscall.SIGKILL); err != nil {
		// Exiting on its own: exited closes once that is recorded.
		slog.Debug("SIGKILL not delivered", "id", c.ID, "err", err)
	}
	d.thawIfPaused(c, task)
	select {
	case <-exited:
		return nil
	case <-time.After(killTimeout):
		return fmt.Errorf("container %s did not exit %s after SIGKILL", c.ID, killTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// autoRemove removes a --rm container after its exit or failed start,
// unless a removal already runs.
func (d *Daemon) autoRemove(c *container.Container) {
	if c.SetRemovalInProgress() {
		return
	}
	defer c.ResetRemovalInProgress()
	if !d.containers.Registered(c.ID) {
		return
	}
	// --rm removes the container's anonymous volumes, as in Docker.
	if err := d.remove(c, true); err != nil {
		slog.Error("auto-remove", "id", c.ID, "err", err)
	}
}

// remove releases everything a stopped container holds. The caller holds
// the removal mark. The steps are ordered for recovery: the record first
// says "removing" (the intent: a restart finishes the removal), then the
// driver's state, the mount, the layer and the journal go, then the record
// (from then on the container is gone: a restart removes a directory
// without a record), then the directory.
func (d *Daemon) remove(c *container.Container, removeVolumes bool) error {
	c.Lock()
	defer c.Unlock()
	if c.State.Running() {
		return errdefs.Conflict(fmt.Errorf("cannot remove container %q: container is running: stop the container before removing or force remove", c.Name))
	}
	c.State.Status = container.StatusRemoving
	if err := c.SaveLocked(); err != nil {
		// A full disk must not keep a container from being removed: a
		// crash from here on leaves the old record, which a later rm
		// finishes.
		slog.Warn("removal not recorded before it starts", "id", c.ID, "err", err)
	}
	crashpoint.Hit("rm-after-intent")
	if err := d.driver.Delete(c.ID); err != nil {
		slog.Debug("exec driver state before remove", "id", c.ID, "err", err)
	}
	if err := d.images.Unmount(c.ID); err != nil {
		slog.Debug("unmount before remove", "id", c.ID, "err", err)
	}
	// Before the directory goes: RemoveAll would empty a /dev/shm still
	// mounted there and then fail on it (and an image view, read-only).
	releaseShm(c.Root)
	d.unmountImageMounts(c)
	if err := d.images.DiscardRWLayer(c.ID); err != nil {
		c.State.Status = container.StatusDead
		_ = c.SaveLocked()
		return fmt.Errorf("remove container layer: %w", err)
	}
	crashpoint.Hit("rm-after-layer-removed")
	if err := removeJournal(c); err != nil {
		slog.Error("remove container journal", "id", c.ID, "err", err)
	}
	if err := c.RemoveRecordLocked(); err != nil {
		c.State.Status = container.StatusDead
		_ = c.SaveLocked()
		return err
	}
	d.containers.Remove(c)
	// After the record: a crash before it leaves the references, which
	// the next daemon rebuilds from the records.
	d.releaseVolumes(c, removeVolumes)
	d.containerEvent(c, eventtypes.ActionDestroy, nil)
	d.forgetExecs(c.ID)
	d.failPending(c.ID, errdefs.NotFound(fmt.Errorf("container %s was removed", c.ID)))
	c.NotifyRemoved()
	crashpoint.Hit("rm-after-record-removed")
	if err := os.RemoveAll(c.Root); err != nil {
		// The container is gone; what is left of its directory goes at
		// the next start.
		slog.Error("remove container dir", "id", c.ID, "err", err)
	}
	return nil
}
