package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/container/restartmanager"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/errdefs"
)

// ContainerStart runs a created or stopped container. The start path reads
// as one story: mount the rootfs, compute the mounts, build the OCI spec,
// hand off to the exec driver (whose shim runs the hooks), connect the
// attachers that were waiting, let the process run, watch for its exit.
func (d *Daemon) ContainerStart(ctx context.Context, name string) error {
	return d.containerStart(ctx, name, nil)
}

// containerStart is a start by the user, with the descriptors the client
// passed for the first process (nil: none).
func (d *Daemon) containerStart(ctx context.Context, name string, files *fdpass.Files) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	// A start by the user starts the restart policy over, as in Docker.
	c.Lock()
	if !c.State.Running() {
		c.ResetRestartManager(true)
		c.HasBeenManuallyStopped = false
	}
	c.Unlock()
	autoRemove, err := d.start(ctx, c, files)
	if err != nil && autoRemove {
		// Docker removes a --rm container whose start failed; a client
		// waiting for its removal would wait forever otherwise.
		d.autoRemove(c)
	}
	return err
}

func (d *Daemon) start(ctx context.Context, c *container.Container, files *fdpass.Files) (autoRemove bool, retErr error) {
	c.Lock()
	defer c.Unlock()
	switch c.State.Status {
	case container.StatusRunning:
		return false, errdefs.NotModified(fmt.Errorf("container %s is already running", c.ID))
	case container.StatusRemoving, container.StatusDead:
		return false, errdefs.Conflict(fmt.Errorf("container %s is marked for removal and cannot be started", c.ID))
	}
	if c.RemovalInProgress() {
		return false, errdefs.Conflict(fmt.Errorf("container %s is marked for removal and cannot be started", c.ID))
	}
	d.mu.Lock()
	closing := d.closing
	d.mu.Unlock()
	if closing {
		return false, errdefs.Unavailable(fmt.Errorf("the daemon is shutting down"))
	}
	task, err := d.startLocked(ctx, c, files)
	if err != nil {
		c.State.SetStartFailed(execdriver.StartExitCode(err), err.Error())
		if serr := c.SaveLocked(); serr != nil {
			slog.Error("save container after failed start", "id", c.ID, "err", serr)
		}
		d.failPending(c.ID, err)
		return c.HostConfig.AutoRemove, err
	}
	// The process runs; a crash before the record says so is found by the
	// next daemon's recovery, which asks the shim (a live, started shim
	// means running, whatever the record says).
	crashpoint.Hit("start-before-record")
	c.State.SetRunning(task.Pid())
	if err := c.SaveLocked(); err != nil {
		slog.Error("save running container", "id", c.ID, "err", err)
	}
	d.registerMachine(c, task.Pid())
	go d.monitor(c, task)
	d.containerEvent(c, eventtypes.ActionStart, nil)
	d.startHealth(c, task)
	d.initNotifyHealth(c)
	return false, nil
}

// startLocked runs the start path: image → rootfs → network → spec (the
// steps of specSteps, from the host config to the hooks) → exec driver. The caller
// registers the machine once the process runs.
//
// files are the descriptors the client passed for the first process, if
// any (api/fdpass).
func (d *Daemon) startLocked(ctx context.Context, c *container.Container, files *fdpass.Files) (task execdriver.Task, retErr error) {
	rootfs, err := d.images.Mount(c.ID)
	if err != nil {
		return nil, fmt.Errorf("mount container rootfs: %w", err)
	}
	c.BaseFS = rootfs
	crashpoint.Hit("start-after-mount")
	defer func() {
		if retErr != nil {
			c.BaseFS = ""
			d.unmountVolumes(c)
			if err := d.images.Unmount(c.ID); err != nil {
				slog.Error("unmount after failed start", "id", c.ID, "err", err)
			}
			releaseShm(c.Root)
		}
	}()
	if err := d.connectNetwork(c); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			d.disconnectNetwork(c)
		}
	}()
	// Every step that shapes the spec, in order: specSteps.
	spec, err := d.buildSpec(c, rootfs, files)
	if err != nil {
		return nil, err
	}
	// The socket is there before the process runs; its messages wait for
	// c's lock, so they are recorded once the start is.
	if err := d.startNotify(c, false); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			d.stopNotify(c)
		}
	}()
	t0 := time.Now()
	task, err = d.driver.Create(ctx, execdriver.CreateOptions{
		ID:            c.ID,
		Spec:          spec,
		Tty:           c.Config.Tty,
		OpenStdin:     c.Config.OpenStdin,
		StdinOnce:     c.Config.StdinOnce,
		ConsoleHeight: consoleDim(c, 0),
		ConsoleWidth:  consoleDim(c, 1),
		Log:           logInfo(c),
		ExtraFiles:    passedFds(files),
	})
	if err != nil {
		if derr := d.driver.Delete(c.ID); derr != nil {
			slog.Debug("clean-up after failed create", "id", c.ID, "err", derr)
		}
		return nil, err
	}
	slog.Debug("container created by the exec driver", "id", c.ID, "took", time.Since(t0))
	// A crash here leaves a shim whose process was never let run: the
	// next daemon's recovery rolls the start back.
	crashpoint.Hit("start-after-shim")
	d.connectPending(ctx, c.ID, task)
	if err := task.Start(); err != nil {
		d.mu.Lock()
		delete(d.tasks, c.ID)
		d.mu.Unlock()
		_ = task.Signal(9)
		if derr := d.driver.Delete(c.ID); derr != nil {
			slog.Debug("clean-up after failed start", "id", c.ID, "err", derr)
		}
		return nil, err
	}
	return task, nil
}

func consoleDim(c *container.Container, i int) uint16 {
	if c.HostConfig.ConsoleSize[i] > 0 {
		return uint16(c.HostConfig.ConsoleSize[i])
	}
	return 0
}

// monitor waits for the container's process to end.
func (d *Daemon) monitor(c *container.Container, task execdriver.Task) {
	st, err := task.Wait(context.Background())
	if err != nil {
		slog.Error("lost track of container", "id", c.ID, "err", err)
		st = execdriver.ExitStatus{Code: 255, ExitedAt: time.Now()}
	}
	d.handleExit(c, st, "")
}

// handleExit records an exit and releases what the run held: the exec
// driver's state, the rootfs mount, and the container itself with --rm.
// The exit is on disk before the driver's state (which holds the shim's
// own record of it) goes, and the task is dropped only then: a stop or a
// kill that saw the container running finds its task until the exit is
// recorded, and a crash in between loses nothing (the next daemon's
// recovery finds an exit already recorded and only releases the rest).
// Everything is done under the container's lock, so that no start or
// removal interleaves with the release.
func (d *Daemon) handleExit(c *container.Container, st execdriver.ExitStatus, errMsg string) {
	d.mu.Lock()
	closing := d.closing && d.cfg.LiveRestore
	d.mu.Unlock()
	if closing {
		return
	}
	c.Lock()
	crashpoint.Hit("exit-before-record")
	c.State.SetExited(st.Code, st.ExitedAt, st.OOMKilled, errMsg)
	c.BaseFS = ""
	if err := c.SaveLocked(); err != nil {
		slog.Error("save exited container", "id", c.ID, "err", err)
	}
	crashpoint.Hit("exit-after-record")
	if err := d.driver.Delete(c.ID); err != nil {
		slog.Error("release exec driver state", "id", c.ID, "err", err)
	}
	if c.RootfsHeld() {
		slog.Debug("rootfs left mounted for its reader (export)", "id", c.ID)
	} else if err := d.images.Unmount(c.ID); err != nil {
		slog.Error("unmount container rootfs", "id", c.ID, "err", err)
	}
	// A shareable /dev/shm lives as long as the container runs, as in
	// Docker; containers that joined it keep their own binds of it.
	releaseShm(c.Root)
	d.unmountVolumes(c)
	d.disconnectNetwork(c)
	if err := c.SaveLocked(); err != nil {
		slog.Error("save exited container", "id", c.ID, "err", err)
	}
	d.mu.Lock()
	delete(d.tasks, c.ID)
	shuttingDown := d.closing
	d.mu.Unlock()
	d.stopHealth(c)
	d.stopNotify(c)
	// The restart policy decides, unless the user restarts the container
	// (docker restart starts it itself) or the daemon is going away.
	var restartAfter <-chan error
	if !c.ManualRestart && !shuttingDown {
		var ok bool
		ok, restartAfter = c.RestartManager().ShouldRestart(st.Code, c.HasBeenManuallyStopped, c.State.FinishedAt.Sub(c.State.StartedAt))
		if ok {
			c.RestartCount++
			c.State.Status = container.StatusRestarting
			if err := c.SaveLocked(); err != nil {
				slog.Error("save restarting container", "id", c.ID, "err", err)
			}
		} else {
			restartAfter = nil
		}
	}
	autoRemove := c.HostConfig.AutoRemove && !c.ManualRestart && restartAfter == nil
	c.NotifyExit()
	c.Unlock()
	d.unregisterMachine(c)
	d.containerEvent(c, eventtypes.ActionDie, map[string]string{
		"exitCode": strconv.Itoa(st.Code), "execDuration": strconv.Itoa(int(st.ExitedAt.Sub(c.State.StartedAt).Seconds())),
	})
	if st.OOMKilled {
		d.containerEvent(c, eventtypes.ActionOOM, nil)
	}
	slog.Debug("container exited", "id", c.ID, "code", st.Code, "restart", restartAfter != nil)
	if restartAfter != nil {
		go d.restartByPolicy(c, restartAfter)
		return
	}
	if autoRemove {
		d.autoRemove(c)
	}
}

// restartByPolicy starts c again once its back-off delay has passed, or
// records it stopped if a stop or kill cancelled the restart meanwhile.
func (d *Daemon) restartByPolicy(c *container.Container, after <-chan error) {
	err := <-after
	startFailed := false
	if err == nil {
		_, err = d.start(context.Background(), c, nil)
		if err != nil {
			startFailed = true
			slog.Warn("restart policy: start failed", "id", c.ID, "err", err)
		}
	}
	if err != nil {
		c.Lock()
		// A start by the user may have run meanwhile (it cancels the
		// pending restart): then there is nothing to end here.
		ended := c.State.Restarting() || startFailed
		if c.State.Restarting() {
			c.State.Status = container.StatusExited
			if serr := c.SaveLocked(); serr != nil {
				slog.Error("save stopped container", "id", c.ID, "err", serr)
			}
		}
		if ended {
			// Waiters since the restart was decided (a stop, a wait)
			// see it end here.
			c.NotifyExit()
		}
		autoRemove := c.HostConfig.AutoRemove && ended
		c.Unlock()
		if autoRemove {
			d.autoRemove(c)
		}
	}
}

// restartOnBoot starts, once recovery is done, the containers the
// restart policy wants running: always, unless-stopped unless the user
// stopped it, and on-failure after a failure, for containers that have
// run before (Docker's behaviour on daemon start).
func (d *Daemon) restartOnBoot() {
	for _, c := range d.containers.List() {
		c.Lock()
		want := !c.State.Running() && !c.State.StartedAt.IsZero() && !c.RestartManager().Pending() &&
			c.State.Status != container.StatusRemoving && c.State.Status != container.StatusDead &&
			restartmanager.Restarts(c.HostConfig.RestartPolicy, c.State.ExitCode, c.HasBeenManuallyStopped, c.RestartCount)
		c.Unlock()
		if !want {
			continue
		}
		slog.Info("restart policy: starting container on daemon start", "id", c.ID, "policy", c.HostConfig.RestartPolicy.Name)
		go func() {
			if _, err := d.start(context.Background(), c, nil); err != nil {
				slog.Error("restart policy: start on daemon start", "id", c.ID, "err", err)
			}
		}()
	}
}
