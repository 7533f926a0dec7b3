package container

// Waiting on a container: each exit closes the channel handed out before it,
// and removal closes its own channel once. Channels are made lazily so that
// records loaded from disk need no set-up. The caller holds the lock.

type notifiers struct {
	exit    *Exit
	removed chan struct{}
}

// Exit is one exit of the container, to come: Done is closed when it has
// happened, and from then on Code and Error hold its status. Waiters read
// the status from here, not from the container's state, which a restart
// may already have reset by the time they run.
type Exit struct {
	done  chan struct{}
	Code  int
	Error string
}

// Done is closed at the exit.
func (e *Exit) Done() <-chan struct{} { return e.done }

// NextExit returns the container's next exit.
func (c *Container) NextExit() *Exit {
	if c.notify.exit == nil {
		c.notify.exit = &Exit{done: make(chan struct{})}
	}
	return c.notify.exit
}

// ExitChan returns a channel closed at the container's next exit.
func (c *Container) ExitChan() <-chan struct{} { return c.NextExit().Done() }

// NotifyExit records the exit status in the state as this exit's and wakes
// everyone waiting for it.
func (c *Container) NotifyExit() {
	if e := c.notify.exit; e != nil {
		e.Code, e.Error = c.State.ExitCode, c.State.Error
		close(e.done)
	}
	c.notify.exit = &Exit{done: make(chan struct{})}
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
