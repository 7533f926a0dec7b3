package daemon

import "github.com/sdengine/engine/container"

// registerMachine tells systemd-machined about a started container.
// (RegisterMachine: being written.) The caller holds c's lock.
func (d *Daemon) registerMachine(c *container.Container, pid int) {}

// unregisterMachine tells systemd-machined the container stopped.
func (d *Daemon) unregisterMachine(c *container.Container) {}
