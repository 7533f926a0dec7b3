package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/timeutil"
)

// ContainerLogs streams the container's log as `docker logs` asks.
// logTimeFormat is how `docker logs -t` prints a line's time: RFC 3339 with
// the nanoseconds always nine digits wide, so that the lines align (Docker's
// RFC3339NanoFixed).
const logTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func (d *Daemon) ContainerLogs(ctx context.Context, name string, opts containertypes.LogsOptions, out backend.StreamFunc) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	c.Lock()
	info, tty := logInfo(c), c.Config.Tty
	running := c.State.Running()
	exited := c.ExitChan()
	c.Unlock()
	if err := logger.CheckReadable(info.Driver); err != nil {
		return err
	}
	ro := logger.ReadOptions{Follow: opts.Follow && running, Tail: -1}
	if opts.Tail != "" && opts.Tail != "all" {
		n, err := strconv.Atoi(opts.Tail)
		if err != nil {
			return errdefs.InvalidParameter(fmt.Errorf("invalid value for tail: %q", opts.Tail))
		}
		ro.Tail = n
	}
	now := time.Now()
	if ro.Since, err = timeutil.Parse(opts.Since, now); err != nil {
		return err
	}
	if ro.Until, err = timeutil.Parse(opts.Until, now); err != nil {
		return err
	}
	streamEnd, stdout, stderr, err := out(tty)
	if err != nil {
		return err
	}
	if streamEnd != nil {
		// Flushes what the stream still buffers.
		defer streamEnd.Close()
	}
	done := exited
	if !ro.Follow {
		closed := make(chan struct{})
		close(closed)
		done = closed
	}
	err = logger.Read(ctx, info, ro, done, func(m logger.Message) error {
		w := stdout
		switch {
		case m.Stream == "stderr" && opts.ShowStderr:
			w = stderr
		case m.Stream != "stderr" && opts.ShowStdout:
		default:
			return nil
		}
		if opts.Timestamps {
			if _, err := io.WriteString(w, m.Time.UTC().Format(logTimeFormat)+" "); err != nil {
				return err
			}
		}
		if opts.Details {
			// Docker puts the entry's attributes (log-opt labels, env)
			// and a space before the line; neither file driver keeps
			// attributes, which leaves the space, as Docker's local
			// driver does.
			if _, err := io.WriteString(w, " "); err != nil {
				return err
			}
		}
		_, err := w.Write(m.Line)
		return err
	})
	if err != nil && ctx.Err() == nil {
		slog.Debug("log stream ended", "id", c.ID, "err", err)
	}
	return nil
}

// pendingAttach is a client attached to a container that has not started
// yet: it is connected to the shim before the process runs, so it sees all
// of the output.
type pendingAttach struct {
	ctx     context.Context
	streams execdriver.Streams
	done    chan error
}

// ContainerAttach connects a client to the container's stdio.
func (d *Daemon) ContainerAttach(ctx context.Context, name string, cfg backend.AttachConfig, out backend.StreamFunc) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	c.Lock()
	status, tty, openStdin := c.State.Status, c.Config.Tty, c.Config.OpenStdin
	c.Unlock()
	if status == container.StatusRemoving || status == container.StatusDead {
		return errdefs.Conflict(fmt.Errorf("container %s is being removed: cannot attach", c.ID))
	}
	detachKeys, err := parseDetachKeys(cfg.DetachKeys)
	if err != nil {
		return err
	}
	stdin, stdout, stderr, err := out(tty)
	if err != nil {
		return err
	}
	defer stdin.Close()
	d.containerEvent(c, eventtypes.ActionAttach, nil)
	if cfg.Logs {
		opts := containertypes.LogsOptions{ShowStdout: cfg.Stdout, ShowStderr: cfg.Stderr}
		replay := func(bool) (io.ReadCloser, io.Writer, io.Writer, error) { return nil, stdout, stderr, nil }
		if err := d.ContainerLogs(ctx, c.ID, opts, replay); err != nil {
			slog.Debug("attach log replay", "id", c.ID, "err", err)
		}
	}
	if !cfg.Stream {
		return nil
	}
	var s execdriver.Streams
	// With a tty, the detach sequence ends this attachment, not the
	// container's stdin (ctrl-p ctrl-q unless the client gave its own);
	// without one stdin is passed on as it is, as in Docker.
	ctx, detach := context.WithCancel(ctx)
	defer detach()
	attachDone := make(chan struct{})
	defer close(attachDone)
	if cfg.Stdin && openStdin {
		// The shim closes what it is given when stdin ends; the connection
		// itself must stay open for the output.
		s.Stdin = io.NopCloser(stdin)
		if tty {
			s.Stdin = io.NopCloser(&detachReader{src: stdin, keys: detachKeys, onDetach: detach, release: attachDone})
		}
	}
	if cfg.Stdout {
		s.Stdout = stdout
	}
	if cfg.Stderr {
		s.Stderr = stderr
	}
	d.mu.Lock()
	task := d.tasks[c.ID]
	if task == nil {
		p := &pendingAttach{ctx: ctx, streams: s, done: make(chan error, 1)}
		d.pending[c.ID] = append(d.pending[c.ID], p)
		d.mu.Unlock()
		select {
		case err := <-p.done:
			return ignoreEnd(err)
		case <-ctx.Done():
			d.dropPending(c.ID, p)
			return nil
		}
	}
	d.mu.Unlock()
	return ignoreEnd(task.Attach(ctx, s))
}

// ignoreEnd: once the stream is hijacked an error can only be logged.
func ignoreEnd(err error) error {
	if err != nil {
		slog.Debug("attach ended", "err", err)
	}
	return nil
}

// connectPending hands the waiting attachers to the new task and makes the
// task visible to later attachers, in one step so that none is missed.
func (d *Daemon) connectPending(ctx context.Context, id string, task execdriver.Task) {
	d.mu.Lock()
	list := d.pending[id]
	delete(d.pending, id)
	d.tasks[id] = task
	d.mu.Unlock()
	for _, p := range list {
		wait, err := task.AttachReady(p.ctx, p.streams)
		if err != nil {
			p.done <- err
			continue
		}
		go func() { p.done <- wait() }()
	}
}

func (d *Daemon) dropPending(id string, p *pendingAttach) {
	d.mu.Lock()
	defer d.mu.Unlock()
	list := d.pending[id]
	for i, q := range list {
		if q == p {
			d.pending[id] = append(list[:i], list[i+1:]...)
			break
		}
	}
}

// failPending ends the attachers of a container that could not start.
func (d *Daemon) failPending(id string, err error) {
	d.mu.Lock()
	list := d.pending[id]
	delete(d.pending, id)
	d.mu.Unlock()
	for _, p := range list {
		p.done <- err
	}
}

// ContainerResize sets the container's tty size.
func (d *Daemon) ContainerResize(ctx context.Context, name string, height, width uint) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	task := d.task(c.ID)
	if task == nil {
		return errdefs.Conflict(fmt.Errorf("container %s is not running", c.ID))
	}
	return task.Resize(clampTTY(height), clampTTY(width))
}
