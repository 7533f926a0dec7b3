package shim

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
)

// shimExec is a process started in the running container by exec.
type shimExec struct {
	proc    *libcontainer.Process
	console *os.File
}

func (e *shimExec) signal(sig syscall.Signal) error {
	if err := e.proc.Signal(sig); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return errdefs.Conflict(errors.New("exec process is not running"))
		}
		return fmt.Errorf("signalling exec process: %w", err)
	}
	return nil
}

// exec runs r in the container and streams its stdio over conn until it
// exits; the last frame carries its exit code.
func (s *shim) exec(conn net.Conn, br *bufio.Reader, r *shimproto.ExecRequest) {
	e, pio, err := s.startExec(r)
	if err != nil {
		_ = shimproto.WriteJSONLine(conn, shimproto.ErrResponse(err))
		return
	}
	pid, _ := e.proc.Pid()
	id := strconv.Itoa(pid)
	s.mu.Lock()
	s.execs[id] = e
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.execs, id)
		s.mu.Unlock()
	}()

	fw := shimproto.NewFrameWriter(conn)
	// A client that went away must not block the process: output is
	// drained (and dropped) regardless.
	clientOK := shimproto.WriteJSONLine(conn, shimproto.Response{Pid: pid, ExecID: id}) == nil
	var mu sync.Mutex
	send := func(kind byte, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		if clientOK && fw.WriteFrame(kind, p) != nil {
			clientOK = false
		}
	}

	var outWG sync.WaitGroup
	for _, o := range pio.outputs() {
		outWG.Add(1)
		go func(o output) {
			defer outWG.Done()
			buf := make([]byte, outputBufSize)
			for {
				n, err := o.f.Read(buf)
				if n > 0 {
					send(o.kind, buf[:n])
				}
				if err != nil {
					return
				}
			}
		}(o)
	}
	go func() {
		for {
			kind, p, err := shimproto.ReadFrame(br)
			if err != nil {
				return
			}
			switch {
			case kind == shimproto.FrameStdin && r.Stdin && pio.stdin != nil:
				_, _ = pio.stdin.Write(p)
			case kind == shimproto.FrameCloseStdin && !r.Tty && pio.stdin != nil:
				pio.stdin.Close()
			}
		}
	}()

	if pid, err := e.proc.Pid(); err == nil {
		awaitExit(pid)
	}
	ps, werr := e.proc.Wait()
	code := exitCode(ps, werr)
	drained := make(chan struct{})
	go func() { outWG.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		s.log.Warn("shim: exec output did not reach EOF", "id", s.id, "exec", id)
	}
	pio.closeAll()
	send(shimproto.FrameExit, []byte(strconv.Itoa(code)))
}

func (s *shim) startExec(r *shimproto.ExecRequest) (*shimExec, *procIO, error) {
	if r == nil || len(r.Args) == 0 {
		return nil, nil, errdefs.InvalidParameter(errors.New("exec: no command"))
	}
	select {
	case <-s.exited:
		return nil, nil, errdefs.Conflict(fmt.Errorf("container %s is not running", s.id))
	default:
	}
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return nil, nil, errdefs.Conflict(fmt.Errorf("container %s is not running", s.id))
	}
	p := &libcontainer.Process{
		Args:          r.Args,
		Env:           r.Env,
		Cwd:           r.Cwd,
		UID:           int(r.UID),
		GID:           int(r.GID),
		Rlimits:       clampRlimits(s.process.Rlimits),
		ConsoleHeight: r.Height,
		ConsoleWidth:  r.Width,
		LogLevel:      initLogLevel,
	}
	if p.Cwd == "" {
		p.Cwd = s.process.Cwd
	}
	for _, g := range r.AdditionalGids {
		p.AdditionalGroups = append(p.AdditionalGroups, int(g))
	}
	if r.Privileged {
		all := filterCaps(oci.AllCapabilities())
		p.Capabilities = &configs.Capabilities{Bounding: all, Effective: all, Permitted: all}
	}
	pio, err := newProcIO(p, r.Tty, r.Stdin)
	if err != nil {
		return nil, nil, err
	}
	// The process starts as libcontainer's init (this binary), which
	// then execs the command: the answer waits for that, so that a
	// signal or a timeout (a health probe's) counts from the command's
	// start, as with start.
	s.mu.Lock()
	initExe := s.initExe
	s.mu.Unlock()
	if err := s.container.Run(p); err != nil {
		pio.closeAll()
		return nil, nil, classifyStartError(fmt.Errorf("exec: %w", err))
	}
	if err := pio.afterStart(); err != nil {
		_ = p.Signal(syscall.SIGKILL)
		_, _ = p.Wait()
		pio.closeAll()
		return nil, nil, err
	}
	if pid, err := p.Pid(); err == nil && initExe != nil {
		waitExeced(pid, initExe, time.Second)
	}
	return &shimExec{proc: p, console: pio.console}, pio, nil
}
