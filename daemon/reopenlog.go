package daemon

import (
	"context"
	"fmt"

	"github.com/sdengine/engine/daemon/logger"
)

// ContainerReopenLog makes the container's log driver write to a new file
// at its log's path: the kubelet rotates a cri log by renaming the file
// and then asking for this (CRI's ReopenContainerLog). The shim holds the
// driver, so the request goes to it. Errors: NotFound for no such
// container, Conflict if it is not running, NotImplemented if its driver
// cannot reopen (only cri can).
func (d *Daemon) ContainerReopenLog(ctx context.Context, name string) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	c.Lock()
	driver := c.HostConfig.LogConfig.Type
	task, err := d.runningTask(c)
	c.Unlock()
	if err != nil {
		return err
	}
	if err := logger.CheckReopenable(driver); err != nil {
		return err
	}
	// Not under the container's lock: the shim answers after a file
	// open, and a container that exits meanwhile makes it a Conflict.
	if err := task.ReopenLog(); err != nil {
		return fmt.Errorf("reopen log of container %s: %w", c.ID, err)
	}
	return nil
}
