package container

// Waiting on a container: each exit closes the channel handed out before it,
// and removal closes its own channel once. Channels are made lazily so that
// records loaded from disk need no set-up. The caller holds the lock.

type notifiers struct {
	exit    chan struct{}
	removed chan struct{}
}

// ExitChan returns a channel closed at the container's next exit.
func (c *Container) ExitChan() <-chan struct{} {
	if c.notify.exit == nil {
		c.notify.exit = make(chan struct{})
	}
	return c.notify.exit
}

// NotifyExit wakes everyone waiting for this exit.
func (c *Container) NotifyExit() {
	if c.notify.exit != nil {
		close(c.notify.exit)
	}
	c.notify.exit = make(chan struct{})
}

// RemovedChan returns a channel closed when the container is removed.
func (c *Container) RemovedChan() <-chan struct{} {
	if c.notify.removed == nil {
		c.notify.removed = make(chan struct{})
	}
	return c.notify.removed
}

// NotifyRemoved wakes everyone waiting for the removal.
func (c *Container) NotifyRemoved() {
	if c.notify.removed == nil {
		c.notify.removed = make(chan struct{})
	}
	select {
	case <-c.notify.removed:
	default:
		close(c.notify.removed)
	}
}
