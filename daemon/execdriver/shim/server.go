package shim

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/pkg/errdefs"
)

func (s *shim) serve() {
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("shim: accept", "err", err)
			}
			return
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			defer conn.Close()
			s.handle(conn)
		}()
	}
}

func (s *shim) handle(conn net.Conn) {
	// A small buffer: a waiter's connection holds it for the container's
	// whole life, and frames larger than it are read around it.
	br := bufio.NewReaderSize(conn, 512)
	var req shimproto.Request
	if err := shimproto.ReadJSONLine(br, &req); err != nil {
		s.log.Debug("shim: bad request", "err", err)
		return
	}
	reply := func(r shimproto.Response) { _ = shimproto.WriteJSONLine(conn, r) }
	switch req.Op {
	case shimproto.OpState:
		s.mu.Lock()
		r := shimproto.Response{Pid: s.pid, Started: s.started, Tty: s.opts.Tty, OpenStdin: s.opts.OpenStdin, StdinOnce: s.opts.StdinOnce}
		s.mu.Unlock()
		select {
		case <-s.exited:
			st := s.exitStatus()
			r.Exit = &st
		default:
		}
		reply(r)
	case shimproto.OpStart:
		reply(s.resp(s.start()))
	case shimproto.OpSignal:
		reply(s.resp(s.signal(syscall.Signal(req.Signal))))
	case shimproto.OpResize:
		reply(s.resp(resizeConsole(s.console, req.Height, req.Width)))
	case shimproto.OpWait:
		// run answers the waiters when the container exited and closes
		// their connections; until then this goroutine only notices a
		// client that gives up (one goroutine per waiter, not two).
		if !s.addWaiter(conn) {
			st := s.exitStatus()
			reply(shimproto.Response{Exit: &st})
			return
		}
		_, _ = br.ReadByte()
		s.removeWaiter(conn)
	case shimproto.OpPause:
		reply(s.resp(s.pause()))
	case shimproto.OpResume:
		reply(s.resp(s.resume()))
	case shimproto.OpUpdate:
		reply(s.resp(s.update(req.Update)))
	case shimproto.OpStats:
		st, err := s.stats()
		if err != nil {
			reply(shimproto.ErrResponse(err))
			return
		}
		reply(shimproto.Response{Stats: st})
	case shimproto.OpReopenLog:
		// logw is set before the socket listens and never replaced.
		reply(s.resp(logger.Reopen(s.logw)))
	case shimproto.OpAttach:
		s.attach(conn, br, req.Stdin)
	case shimproto.OpExec:
		s.exec(conn, br, req.Exec)
	case shimproto.OpExecSignal, shimproto.OpExecResize:
		s.mu.Lock()
		e := s.execs[req.ExecID]
		s.mu.Unlock()
		if e == nil {
			reply(shimproto.ErrResponse(errdefs.NotFound(fmt.Errorf("no such exec process: %s", req.ExecID))))
			return
		}
		if req.Op == shimproto.OpExecSignal {
			reply(s.resp(e.signal(syscall.Signal(req.Signal))))
		} else {
			reply(s.resp(resizeConsole(e.console, req.Height, req.Width)))
		}
	default:
		reply(shimproto.ErrResponse(errdefs.InvalidParameter(fmt.Errorf("unknown shim operation %q", req.Op))))
	}
}

// addWaiter registers conn to be answered at the exit, unless the exit
// is already recorded.
func (s *shim) addWaiter(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited:
		return false
	default:
	}
	s.waiters = append(s.waiters, conn)
	return true
}

func (s *shim) removeWaiter(conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.waiters {
		if c == conn {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			return
		}
	}
}

func (s *shim) resp(err error) shimproto.Response {
	if err != nil {
		return shimproto.ErrResponse(err)
	}
	return shimproto.Response{}
}

func (s *shim) exitStatus() execdriver.ExitStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *shim) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errdefs.Conflict(errors.New("container already started"))
	}
	before, beforeErr := os.Stat(fmt.Sprintf("/proc/%d/exe", s.pid))
	if err := s.container.Exec(); err != nil {
		return classifyStartError(fmt.Errorf("starting container: %w", err))
	}
	s.started = true
	s.startedAt = time.Now()
	if beforeErr == nil {
		s.initExe = before
		waitExeced(s.pid, before, time.Second)
	}
	return nil
}

// waitExeced waits (at most timeout) until the init process has exec'd
// the container's program: libcontainer's Exec returns once the init read
// its go-ahead, a moment before the exec. A signal sent in that moment
// (a `docker stop` right after `docker run -d`) reaches the init before
// the program could install its handler, and PID 1 ignores what it does
// not handle: a shell's SIGTERM trap would never run. The program is
// there once /proc/PID/exe is no longer the init's binary.
//
// The exec itself sends no event, so it is polled, at most every
// millisecond: the wait is on the path of every start and exec, and a
// coarser step is time lost after the exec (a 5 ms step cost 2.5 ms on
// average). A process that exits (a quick exec's `true`) ends the wait
// at once through its pidfd.
func waitExeced(pid int, before os.FileInfo, timeout time.Duration) {
	exited := func(time.Duration) bool { return false }
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		defer unix.Close(fd)
		exited = func(d time.Duration) bool {
			ts := unix.NsecToTimespec(d.Nanoseconds())
			n, err := unix.Ppoll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, &ts, nil)
			return err == nil && n > 0
		}
	}
	deadline := time.Now().Add(timeout)
	for delay := 50 * time.Microsecond; time.Now().Before(deadline); delay = min(2*delay, time.Millisecond) {
		fi, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || !os.SameFile(fi, before) {
			return // exec'd, or already gone
		}
		start := time.Now()
		if exited(delay) {
			return
		}
		if rest := delay - time.Since(start); rest > 0 {
			time.Sleep(rest) // no pidfd, or ppoll interrupted
		}
	}
	slog.Warn("shim: the container's program was not exec'd in time", "pid", pid, "timeout", timeout)
}

func (s *shim) signal(sig syscall.Signal) error {
	s.mu.Lock()
	deadline := s.startedAt.Add(settleWindow)
	s.mu.Unlock()
	if err := signalWhenReady(s.pid, sig, deadline, func(sig syscall.Signal) error { return s.container.Signal(sig) }); err != nil {
		if errors.Is(err, libcontainer.ErrNotRunning) {
			return errdefs.Conflict(fmt.Errorf("container %s is not running", s.id))
		}
		return fmt.Errorf("signalling container: %w", err)
	}
	return nil
}

// attach streams the container's output to conn until it ends, and feeds
// what the client sends to the container's stdin.
func (s *shim) attach(conn net.Conn, br *bufio.Reader, wantStdin bool) {
	sub := &subscriber{fw: shimproto.NewFrameWriter(conn), done: make(chan struct{})}
	// Subscribe and answer under the connection's write lock: output
	// cannot overtake the answer, and once the client has the answer it
	// is guaranteed to see all output from then on.
	sub.fw.Lock()
	ok := s.out.add(sub)
	err := shimproto.WriteJSONLine(conn, shimproto.Response{})
	if err == nil && !ok {
		_ = sub.fw.WriteOneLocked(shimproto.FrameEnd, nil)
	}
	sub.fw.Unlock()
	if !ok {
		return
	}
	if err != nil {
		s.out.remove(sub)
		return
	}
	go func() {
		// Client -> container. The reader ends when the connection closes.
		for {
			kind, p, err := shimproto.ReadFrame(br)
			if err != nil {
				s.out.remove(sub)
				return
			}
			switch kind {
			case shimproto.FrameStdin:
				if wantStdin && s.stdin != nil && s.opts.OpenStdin {
					if _, err := s.stdin.Write(p); err != nil {
						s.log.Debug("shim: stdin write", "err", err)
					}
				}
			case shimproto.FrameCloseStdin:
				if wantStdin && s.opts.StdinOnce {
					s.closeStdin()
				}
			}
		}
	}()
	<-sub.done
}

// closeStdin gives the container EOF on stdin. A pty cannot be half
// closed, so with a tty this is left to the process.
func (s *shim) closeStdin() {
	if s.opts.Tty || s.stdin == nil {
		return
	}
	s.stdinOnce.Do(func() { s.stdin.Close() })
}
