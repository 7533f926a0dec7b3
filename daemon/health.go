package daemon

import (
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/execdriver"
)

func (d *Daemon) startHealth(c *container.Container, task execdriver.Task) {}

func (d *Daemon) stopHealth(c *container.Container) {}
