package httputils

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A hijacked connection whose client is killed while nothing is written to
// it shows nothing to a reader: the client may have half-closed it long
// before (Docker's CLI does when it has no stdin to send, or when its stdin
// ended), so EOF on the read side says "no more input", not "gone". What
// does tell is a hangup: on a unix socket the kernel marks both directions
// shut down when the peer closes, and on TCP a reset (the answer to our
// next write or keep-alive probe) does the same.
//
// hangups watches hijacked connections for that in one epoll set of its
// own, served by one goroutine, interested only in EPOLLHUP and EPOLLERR
// (which epoll always reports), one-shot.
var hangups hangupWatcher

type hangupWatcher struct {
	once  sync.Once
	epfd  int
	err   error
	mu    sync.Mutex
	next  uint32
	funcs map[uint32]func()
}

// watch calls fn once when c hangs up. stop, which must be called before c
// is closed, ends the watch; it is safe to call more than once. A
// connection that cannot be watched (no file descriptor) gets a stop that
// does nothing.
func (h *hangupWatcher) watch(c net.Conn, fn func()) (stop func()) {
	for {
		nc, ok := c.(interface{ NetConn() net.Conn }) // *tls.Conn
		if !ok {
			break
		}
		c = nc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	h.once.Do(h.start)
	if h.err != nil {
		return func() {}
	}
	h.mu.Lock()
	h.next++
	token := h.next
	h.funcs[token] = fn
	h.mu.Unlock()
	var ctlErr error
	err = rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: int32(token)}
		ctlErr = unix.EpollCtl(h.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err == nil {
		err = ctlErr
	}
	if err != nil {
		slog.Debug("API: cannot watch a hijacked connection for hangup", "err", err)
		h.forget(token)
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			h.forget(token)
			// While c is open its descriptor is still the one watched.
			_ = rc.Control(func(fd uintptr) {
				_ = unix.EpollCtl(h.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
			})
		})
	}
}

func (h *hangupWatcher) forget(token uint32) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn := h.funcs[token]
	delete(h.funcs, token)
	return fn
}

func (h *hangupWatcher) start() {
	h.epfd, h.err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if h.err != nil {
		slog.Warn("API: no hangup watch for hijacked connections", "err", h.err)
		return
	}
	h.funcs = map[uint32]func(){}
	go h.loop()
}

func (h *hangupWatcher) loop() {
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(h.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			slog.Error("API: hangup watch ended", "err", err)
			return
		}
		for _, ev := range events[:n] {
			if fn := h.forget(uint32(ev.Fd)); fn != nil {
				go fn()
			}
		}
	}
}
