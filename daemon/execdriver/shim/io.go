package shim

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
)

// procIO owns the shim's side of one container process's stdio: pipes,
// or a pty whose master arrives over a socketpair from runc init.
type procIO struct {
	tty bool
	// shim ends
	stdin          *os.File
	stdout, stderr *os.File
	console        *os.File
	consoleSock    *os.File
	// process ends, closed once the process started
	childFiles []*os.File
}

type output struct {
	f      *os.File
	stream string
	kind   byte
}

func newProcIO(p *libcontainer.Process, tty, openStdin bool) (_ *procIO, retErr error) {
	pio := &procIO{tty: tty}
	defer func() {
		if retErr != nil {
			pio.closeAll()
		}
	}()
	if tty {
		parent, child, err := utils.NewSockPair("console")
		if err != nil {
			return nil, fmt.Errorf("console socket: %w", err)
		}
		pio.consoleSock = parent
		pio.childFiles = append(pio.childFiles, child)
		p.ConsoleSocket = child
		return pio, nil
	}
	if openStdin {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		pio.stdin = w
		pio.childFiles = append(pio.childFiles, r)
		p.Stdin = r
	}
	for _, dst := range []*(*os.File){&pio.stdout, &pio.stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		*dst = r
		pio.childFiles = append(pio.childFiles, w)
	}
	p.Stdout = pio.childFiles[len(pio.childFiles)-2]
	p.Stderr = pio.childFiles[len(pio.childFiles)-1]
	return pio, nil
}

// afterStart drops the process's ends (so EOF arrives when it exits) and
// receives the pty master.
func (pio *procIO) afterStart() error {
	for _, f := range pio.childFiles {
		f.Close()
	}
	pio.childFiles = nil
	if !pio.tty {
		return nil
	}
	//lint:ignore SA1019 runc moved it to an internal package; this is the only public way to receive the pty master
	master, err := utils.RecvFile(pio.consoleSock)
	pio.consoleSock.Close()
	pio.consoleSock = nil
	if err != nil {
		return fmt.Errorf("receiving console: %w", err)
	}
	master = pollable(master)
	pio.console = master
	pio.stdin = master
	return nil
}

func (pio *procIO) outputs() []output {
	if pio.tty {
		return []output{{pio.console, "stdout", shimproto.FrameStdout}}
	}
	return []output{{pio.stdout, "stdout", shimproto.FrameStdout}, {pio.stderr, "stderr", shimproto.FrameStderr}}
}

func (pio *procIO) closeAll() {
	for _, f := range append(pio.childFiles, pio.stdin, pio.stdout, pio.stderr, pio.console, pio.consoleSock) {
		if f != nil {
			f.Close()
		}
	}
}

func resizeConsole(console *os.File, height, width uint16) error {
	if console == nil {
		return nil // resizing a process without a tty is a no-op, as in Docker
	}
	ws := &unix.Winsize{Row: height, Col: width}
	// Through Control, not Fd: Fd would put the descriptor in blocking
	// mode, under the reader that polls it.
	rc, err := console.SyscallConn()
	if err != nil {
		return fmt.Errorf("resizing tty: %w", err)
	}
	if cerr := rc.Control(func(fd uintptr) { err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("resizing tty: %w", err)
	}
	return nil
}

// broadcaster fans the container's output out to the attached clients.
// Writes are synchronous so that a client sees output in order and a
// slow client slows the container down rather than losing data; a client
// that cannot take a frame within shimproto.WriteTimeout is dropped.
type broadcaster struct {
	mu    sync.Mutex
	subs  map[*subscriber]struct{}
	ended bool
}

type subscriber struct {
	fw   *shimproto.FrameWriter
	done chan struct{} // closed when the subscriber is removed or output ended
}

// add registers s; false means the output already ended.
func (b *broadcaster) add(s *subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return false
	}
	if b.subs == nil {
		b.subs = map[*subscriber]struct{}{}
	}
	b.subs[s] = struct{}{}
	return true
}

func (b *broadcaster) remove(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.done)
	}
}

func (b *broadcaster) send(kind byte, p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if err := s.fw.WriteFrame(kind, p); err != nil {
			slog.Debug("shim: dropping attached client", "err", err)
			delete(b.subs, s)
			close(s.done)
		}
	}
}

// end tells every subscriber that there is no more output.
func (b *broadcaster) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	for s := range b.subs {
		_ = s.fw.WriteFrame(shimproto.FrameEnd, nil)
		delete(b.subs, s)
		close(s.done)
	}
}
