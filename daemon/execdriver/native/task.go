package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/opencontainers/cgroups"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Task is the daemon's handle on a container owned by a shim. It holds no
// state the shim does not also have, so a new daemon can make a new one.
type Task struct {
	d   *Driver
	id  string
	dir string
	pid int
	tty bool

	// attaching counts Attach calls that have not yet been subscribed, so
	// that Start can let them catch the very first output.
	attaching sync.WaitGroup
}

var _ execdriver.Task = (*Task)(nil)

// ID returns the container's id.
func (t *Task) ID() string { return t.id }

// Pid returns the host pid of the container's init process.
func (t *Task) Pid() int { return t.pid }

// simple sends a request that needs only an answer.
func (t *Task) simple(req shimproto.Request) (shimproto.Response, error) {
	conn, _, resp, err := shimproto.Call(t.dir, req)
	if err != nil {
		return resp, t.connErr(err)
	}
	conn.Close()
	return resp, nil
}

// connErr explains a failure to talk to the shim: once the container
// exited the shim goes away, and that is a state conflict, not a fault.
func (t *Task) connErr(err error) error {
	if errdefs.ClassOf(err) != errdefs.ClassUnknown {
		return err
	}
	var ne *net.OpError
	if errors.As(err, &ne) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		if st, _ := shimproto.ReadExit(t.dir); st != nil {
			return errdefs.Conflict(fmt.Errorf("container %s is not running", t.id))
		}
		// The daemon releases the state directory only after it recorded
		// the exit: without it the container has exited too.
		if _, serr := os.Stat(t.dir); errors.Is(serr, os.ErrNotExist) {
			return errdefs.Conflict(fmt.Errorf("container %s is not running", t.id))
		}
	}
	return fmt.Errorf("container %s: %w", t.id, err)
}

// Pause freezes the container.
func (t *Task) Pause() error {
	_, err := t.simple(shimproto.Request{Op: shimproto.OpPause})
	return err
}

// Resume thaws the container.
func (t *Task) Resume() error {
	_, err := t.simple(shimproto.Request{Op: shimproto.OpResume})
	return err
}

// Update changes the container's limits.
func (t *Task) Update(u execdriver.Update) error {
	_, err := t.simple(shimproto.Request{Op: shimproto.OpUpdate, Update: &shimproto.Update{
		Memory: u.Memory, MemorySwap: u.MemorySwap, MemoryReservation: u.MemoryReservation,
		CPUShares: u.CPUShares, CPUQuota: u.CPUQuota, CPUPeriod: u.CPUPeriod,
		CpusetCpus: u.CpusetCpus, CpusetMems: u.CpusetMems, PidsLimit: u.PidsLimit, BlkioWeight: u.BlkioWeight,
	}})
	return err
}

// Stats reads the container's cgroup statistics.
func (t *Task) Stats() (*cgroups.Stats, error) {
	resp, err := t.simple(shimproto.Request{Op: shimproto.OpStats})
	if err != nil {
		return nil, err
	}
	if resp.Stats == nil {
		return nil, fmt.Errorf("container %s: the shim sent no statistics", t.id)
	}
	return resp.Stats, nil
}

// ReopenLog makes the container's log driver reopen its file.
func (t *Task) ReopenLog() error {
	_, err := t.simple(shimproto.Request{Op: shimproto.OpReopenLog})
	return err
}

// Start lets the container's process run.
func (t *Task) Start() error {
	t.attaching.Wait()
	_, err := t.simple(shimproto.Request{Op: shimproto.OpStart})
	return err
}

// Signal sends sig to the container's init process.
func (t *Task) Signal(sig syscall.Signal) error {
	_, err := t.simple(shimproto.Request{Op: shimproto.OpSignal, Signal: int(sig)})
	return err
}

// Resize changes the container's tty size (no-op without a tty).
func (t *Task) Resize(height, width uint16) error {
	_, err := t.simple(shimproto.Request{Op: shimproto.OpResize, Height: height, Width: width})
	return err
}

// Wait blocks until the container exited and returns how.
func (t *Task) Wait(ctx context.Context) (execdriver.ExitStatus, error) {
	type result struct {
		st  execdriver.ExitStatus
		err error
	}
	conn, br, err := t.open(shimproto.Request{Op: shimproto.OpWait})
	if err != nil {
		if st, _ := shimproto.ReadExit(t.dir); st != nil {
			return *st, nil
		}
		return execdriver.ExitStatus{}, t.connErr(err)
	}
	defer conn.Close()
	ch := make(chan result, 1)
	go func() {
		var resp shimproto.Response
		err := shimproto.ReadJSONLine(br, &resp)
		if err == nil && resp.Exit == nil {
			err = resp.Err()
			if err == nil {
				err = errors.New("shim sent no exit status")
			}
		}
		if err != nil {
			// The shim died or exited before answering: the record
			// on disk is the truth.
			if st, _ := shimproto.ReadExit(t.dir); st != nil {
				ch <- result{st: *st}
				return
			}
			ch <- result{err: fmt.Errorf("waiting for %s: %w", t.id, err)}
			return
		}
		ch <- result{st: *resp.Exit}
	}()
	select {
	case r := <-ch:
		return r.st, r.err
	case <-ctx.Done():
		return execdriver.ExitStatus{}, ctx.Err()
	}
}

// open sends a request whose answer the caller reads itself.
func (t *Task) open(req shimproto.Request) (net.Conn, *bufio.Reader, error) {
	conn, err := shimproto.Dial(t.dir)
	if err != nil {
		return nil, nil, err
	}
	if err := shimproto.WriteJSONLine(conn, req); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, bufio.NewReader(conn), nil
}

// Attach connects s to the container's stdio. It returns when the
// container's output ended or ctx is done. Attachers connected before
// Start see all the output.
func (t *Task) Attach(ctx context.Context, s execdriver.Streams) error {
	t.attaching.Add(1)
	stream, err := t.AttachReady(ctx, s)
	t.attaching.Done()
	if err != nil {
		return err
	}
	return stream()
}

// AttachReady subscribes s to the container's stdio and returns once the
// shim has registered it, so that a caller about to call Start knows no
// output can be missed; the returned function streams until the output
// ends or ctx is done.
func (t *Task) AttachReady(ctx context.Context, s execdriver.Streams) (func() error, error) {
	conn, br, _, err := shimproto.Call(t.dir, shimproto.Request{Op: shimproto.OpAttach, Stdin: s.Stdin != nil})
	if err != nil {
		return nil, t.connErr(err)
	}
	return func() error {
		defer conn.Close()
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		defer stop()
		if s.Stdin != nil {
			go pumpStdin(conn, s.Stdin)
		}
		err := pumpOutput(br, s, nil)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}, nil
}

// pumpStdin forwards the client's stdin; EOF becomes a close-stdin frame.
func pumpStdin(conn net.Conn, in io.Reader) {
	fw := shimproto.NewFrameWriter(conn)
	buf := make([]byte, 32*1024)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if fw.WriteFrame(shimproto.FrameStdin, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			_ = fw.WriteFrame(shimproto.FrameCloseStdin, nil)
			return
		}
	}
}

// pumpOutput copies output frames to s until the end (attach) or exit
// (exec) frame; onExit receives the exit code text of the latter.
//
// A write that fails means the client went away. An attach (onExit nil)
// stops there, so that its caller closes the connection to the shim,
// which ends the shim's subscription; an exec reads on, dropping the
// output, because its exit code is still to come on this connection.
func pumpOutput(br *bufio.Reader, s execdriver.Streams, onExit func([]byte)) error {
	write := func(w *io.Writer, p []byte) error {
		if *w == nil {
			return nil
		}
		if _, err := (*w).Write(p); err != nil {
			if onExit == nil {
				return fmt.Errorf("attached client gone: %w", err)
			}
			*w = nil
		}
		return nil
	}
	for {
		kind, p, err := shimproto.ReadFrame(br)
		if err != nil {
			return fmt.Errorf("connection to shim lost: %w", err)
		}
		switch kind {
		case shimproto.FrameStdout:
			err = write(&s.Stdout, p)
		case shimproto.FrameStderr:
			err = write(&s.Stderr, p)
		case shimproto.FrameEnd:
			return nil
		case shimproto.FrameExit:
			if onExit != nil {
				onExit(p)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ExecProcess is a process started by Exec.
type ExecProcess struct {
	t      *Task
	pid    int
	execID string
	done   chan struct{}
	code   int
	err    error
}

var _ execdriver.Process = (*ExecProcess)(nil)

// Exec starts a process in the container; its stdio flows between the
// process and o.Streams until it exits.
func (t *Task) Exec(ctx context.Context, o execdriver.ExecOptions) (execdriver.Process, error) {
	if len(o.Args) == 0 {
		return nil, errdefs.InvalidParameter(errors.New("no exec command specified"))
	}
	req := shimproto.Request{Op: shimproto.OpExec, Exec: &shimproto.ExecRequest{
		Args: o.Args, Env: o.Env, Cwd: o.Cwd, UID: o.UID, GID: o.GID,
		AdditionalGids: o.AdditionalGids, Tty: o.Tty, Privileged: o.Privileged,
		Height: o.ConsoleHeight, Width: o.ConsoleWidth, Stdin: o.Streams.Stdin != nil,
	}}
	type result struct {
		conn net.Conn
		br   *bufio.Reader
		resp shimproto.Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		conn, br, resp, err := shimproto.Call(t.dir, req)
		ch <- result{conn, br, resp, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, t.connErr(r.err)
	}
	p := &ExecProcess{t: t, pid: r.resp.Pid, execID: r.resp.ExecID, done: make(chan struct{}), code: -1}
	if o.Streams.Stdin != nil {
		go pumpStdin(r.conn, o.Streams.Stdin)
	}
	go func() {
		defer close(p.done)
		defer r.conn.Close()
		gotExit := false
		err := pumpOutput(r.br, o.Streams, func(b []byte) {
			gotExit = true
			p.code, p.err = strconv.Atoi(string(b))
		})
		if !gotExit && p.err == nil {
			if err == nil {
				err = errors.New("no exit code")
			}
			p.err = fmt.Errorf("exec in %s: %w", t.id, err)
		}
	}()
	return p, nil
}

// Pid returns the exec'd process's host pid.
func (p *ExecProcess) Pid() int { return p.pid }

// Resize changes the exec's tty size (no-op without a tty).
func (p *ExecProcess) Resize(height, width uint16) error {
	_, err := p.t.simple(shimproto.Request{Op: shimproto.OpExecResize, ExecID: p.execID, Height: height, Width: width})
	return err
}

// Signal sends sig to the exec'd process.
func (p *ExecProcess) Signal(sig syscall.Signal) error {
	_, err := p.t.simple(shimproto.Request{Op: shimproto.OpExecSignal, ExecID: p.execID, Signal: int(sig)})
	return err
}

// Wait returns the exec'd process's exit code (128+signal if killed).
func (p *ExecProcess) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		return p.code, p.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}
