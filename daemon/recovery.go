package daemon

// Crash consistency of containers. Each operation that takes several steps
// is ordered so that whatever a kill -9 of the daemon leaves, the next
// daemon can tell from the disk and the exec driver how far it got, and
// either finish it or undo it:
//
//   - create: the container's directory, then its writable layer (the
//     graph driver's directory, then the layer's record), then the
//     container's record, written atomically. The record is the commit
//     point: a directory without one is a create that never completed.
//   - start: mount the rootfs, build the spec, create the container in a
//     shim (the process waits), let the process run, then record Running.
//     The shim is the truth: a live shim whose process was let run is a
//     running container, whatever the record says; one whose process was
//     never let run is a start that never happened.
//   - exit (stop, kill, or on its own): the exit is recorded, then the
//     shim's state, the mount and the task go. A shim's recorded exit that
//     is newer than the record's is recorded.
//   - rm: the record first says "removing" (the write-ahead intent), then
//     the shim's state, the mount, the layer and the journal go, then the
//     record (the container is gone), then the directory.
//
// recover runs once in New, before the API serves, and reconciles every
// container directory, every piece of exec driver state (shims, their
// state directories, libcontainer's state, cgroups) and every writable
// layer with the records, logging what it does.

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/pkg/errdefs"
)

// shimFinding is what the exec driver has of one container.
type shimFinding int

const (
	shimNone       shimFinding = iota // no trace of it
	shimRunning                       // a live shim whose process was let run
	shimNotStarted                    // a live shim whose process was never let run
	shimExited                        // the shim recorded an exit
	shimBroken                        // state there but no usable shim
)

func (f shimFinding) String() string {
	return [...]string{"none", "running", "not started", "exited", "broken"}[f]
}

// recoveryAction is what recovery does with one container that has a record.
type recoveryAction int

const (
	keepRecord recoveryAction = iota // nothing ran: only a stray mount to release
	adoptTask                        // re-adopt the task: the container is running
	recordExit                       // record the shim's exit, then release the rest
	rollBack                         // release the driver's state and the mount; the record stands
	recordLost                       // record exit 255 "container state lost", release the rest
)

func (a recoveryAction) String() string {
	return [...]string{"keep", "adopt", "record exit", "roll back", "state lost"}[a]
}

// decideRecovery is recovery's rule for a container with a record: running
// is what the record says, recordedFinish its last recorded exit, found
// what the exec driver has and shimExitedAt the exit the shim recorded.
func decideRecovery(running bool, recordedFinish time.Time, found shimFinding, shimExitedAt time.Time) recoveryAction {
	switch found {
	case shimRunning:
		// Whatever the record says: a start whose record was not written.
		return adoptTask
	case shimExited:
		// The record may already have this exit (a crash after the exit
		// was recorded, before the shim's state was released), or an
		// older one (a start that was not recorded ran and exited).
		if running || shimExitedAt.After(recordedFinish) {
			return recordExit
		}
		return rollBack
	case shimNotStarted, shimBroken:
		if running {
			return recordLost
		}
		return rollBack
	}
	if running {
		return recordLost
	}
	return keepRecord
}

// recover reconciles the records with everything else on disk and in the
// exec driver. See the comment at the top of this file.
func (d *Daemon) recover(ctx context.Context) {
	// Removals a crash interrupted: the record says "removing".
	for _, c := range d.containers.List() {
		c.Lock()
		removing := c.State.Status == container.StatusRemoving
		c.Unlock()
		if !removing {
			continue
		}
		slog.Info("recovery: finishing a removal cut short by a crash", "id", c.ID)
		c.SetRemovalInProgress()
		if err := d.remove(c, false); err != nil {
			slog.Error("recovery: finishing a removal", "id", c.ID, "err", err)
		}
		c.ResetRemovalInProgress()
	}

	// Directories without a record: a create that never reached its
	// record, or a removal past it.
	for _, id := range d.containers.NoRecord() {
		slog.Info("recovery: removing a container directory without a record (a create or removal cut short)", "id", id)
		d.discard(id)
	}
	unreadable := map[string]bool{}
	for _, id := range d.containers.Unreadable() {
		unreadable[id] = true
	}

	// Exec driver state of containers without a record.
	inDriver := map[string]bool{}
	ids, err := d.driver.List()
	if err != nil {
		slog.Error("recovery: cannot list the exec driver's containers", "err", err)
	}
	for _, id := range ids {
		inDriver[id] = true
		if d.containers.Registered(id) || unreadable[id] {
			continue
		}
		slog.Info("recovery: removing the shim and runtime state of a container without a record", "id", id)
		if err := d.driver.Delete(id); err != nil {
			slog.Error("recovery: removing runtime state", "id", id, "err", err)
		}
	}

	// Each container: its record against its shim.
	for _, c := range d.containers.List() {
		d.recoverContainer(ctx, c, inDriver[c.ID])
	}

	// The bridge: rules from the containers that kept running; leases,
	// veths and namespaces of any other are released.
	d.net.Reconcile()

	// Writable layers of containers without a record.
	for _, id := range d.images.RWLayerIDs() {
		if d.containers.Registered(id) || unreadable[id] {
			continue
		}
		slog.Info("recovery: removing the writable layer of a container without a record", "id", id)
		if err := d.images.DiscardRWLayer(id); err != nil {
			slog.Error("recovery: removing a writable layer", "id", id, "err", err)
		}
	}
}

// discard removes everything of a container that has no record.
func (d *Daemon) discard(id string) {
	if err := d.driver.Delete(id); err != nil {
		slog.Error("recovery: removing runtime state", "id", id, "err", err)
	}
	if err := d.images.DiscardRWLayer(id); err != nil {
		slog.Error("recovery: removing a writable layer", "id", id, "err", err)
	}
	releaseShm(filepath.Join(d.containers.Root(), id))
	if err := unmountImageViews(filepath.Join(d.containers.Root(), id, "image-mounts")); err != nil {
		slog.Error("recovery: unmounting image mounts", "id", id, "err", err)
	}
	if err := os.RemoveAll(filepath.Join(d.containers.Root(), id)); err != nil {
		slog.Error("recovery: removing a container directory", "id", id, "err", err)
	}
}

// recoverContainer brings one container's record and its shim into line.
func (d *Daemon) recoverContainer(ctx context.Context, c *container.Container, inDriver bool) {
	c.Lock()
	running := c.State.Running()
	finished := c.State.FinishedAt
	c.Unlock()

	found := shimNone
	var task execdriver.Task
	var exit execdriver.ExitStatus
	var restoreErr error
	if inDriver || running {
		task, restoreErr = d.driver.Restore(ctx, c.ID)
		var exited *execdriver.ExitedError
		var notStarted *execdriver.NotStartedError
		switch {
		case restoreErr == nil:
			found = shimRunning
		case errors.As(restoreErr, &exited):
			found, exit = shimExited, exited.Status
		case errors.As(restoreErr, &notStarted):
			found = shimNotStarted
		case errdefs.IsNotFound(restoreErr):
			found = shimNone
		default:
			found = shimBroken
		}
	}
	action := decideRecovery(running, finished, found, exit.ExitedAt)
	log := slog.With("id", c.ID, "recorded-running", running, "action", action.String())
	switch action {
	case adoptTask:
		d.adopt(c, task, running)
		if running {
			log.Info("reconnected to running container", "pid", task.Pid())
		} else {
			log.Info("recovery: the container runs though its start was not recorded; adopted as running", "pid", task.Pid())
		}
	case recordExit:
		log.Info("recovery: container exited while the daemon was down", "code", exit.Code)
		d.handleExit(c, exit, "")
	case rollBack:
		log.Info("recovery: releasing what a start or exit cut short left", "found", found.String(), "err", restoreErr)
		d.release(c)
	case recordLost:
		log.Error("recovery: container's shim is gone and left no exit status", "err", restoreErr)
		d.handleExit(c, execdriver.ExitStatus{Code: 255, ExitedAt: time.Now()}, "container state lost: "+errString(restoreErr))
	default:
		// A container that is not running holds no mount; one may be
		// left from a crash between exit and clean-up, or during a start.
		if err := d.images.Unmount(c.ID); err != nil {
			slog.Debug("unmount of stopped container", "id", c.ID, "err", err)
		}
		releaseShm(c.Root)
		c.Lock()
		d.unmountImageMounts(c)
		c.Unlock()
	}
}

// adopt makes a restored task the container's, recording it as running
// if the record did not say so.
func (d *Daemon) adopt(c *container.Container, task execdriver.Task, wasRunning bool) {
	c.Lock()
	defer c.Unlock()
	d.mu.Lock()
	d.tasks[c.ID] = task
	d.mu.Unlock()
	d.restoreNetwork(c)
	if err := d.startNotify(c, true); err != nil {
		slog.Error("recovery: notify socket", "id", c.ID, "err", err)
	}
	if !wasRunning {
		if rootfs, err := d.images.Mount(c.ID); err == nil {
			// The mount is the one the shim runs on: Mount returns it.
			c.BaseFS = rootfs
		}
		c.State.SetRunning(task.Pid())
		if err := c.SaveLocked(); err != nil {
			slog.Error("save adopted container", "id", c.ID, "err", err)
		}
		d.registerMachine(c, task.Pid())
		d.startHealth(c, task)
	} else {
		d.resumeHealth(c)
	}
	go d.monitor(c, task)
}

// release undoes a start or an exit that a crash cut short: the driver's
// state (killing a shim whose process never ran) and the rootfs mount.
func (d *Daemon) release(c *container.Container) {
	c.Lock()
	defer c.Unlock()
	if err := d.driver.Delete(c.ID); err != nil {
		slog.Error("recovery: removing runtime state", "id", c.ID, "err", err)
	}
	if err := d.images.Unmount(c.ID); err != nil {
		slog.Debug("unmount of stopped container", "id", c.ID, "err", err)
	}
	releaseShm(c.Root)
	d.unmountImageMounts(c)
	d.disconnectNetwork(c)
	c.BaseFS = ""
}

func errString(err error) string {
	if err == nil {
		return "no trace of it in the exec driver"
	}
	return err.Error()
}
