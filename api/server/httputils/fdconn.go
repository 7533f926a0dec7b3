package httputils

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/api/fdpass"
)

// FDListener wraps a unix socket listener so that the descriptors clients
// send with SCM_RIGHTS (api/fdpass) are kept, not lost: a plain read
// drops them. Connections of any other kind pass through untouched.
type FDListener struct{ net.Listener }

// Accept wraps a unix connection in an FDConn.
func (l FDListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if uc, ok := c.(*net.UnixConn); ok && err == nil {
		return &FDConn{UnixConn: uc}, nil
	}
	return c, err
}

// FDConn is a unix connection that keeps the descriptors that come with
// what it reads, for the request that asks for them (TakeFiles). It keeps
// at most fdpass.MaxFiles; the rest, and whatever no request takes, are
// closed.
type FDConn struct {
	*net.UnixConn
	oob []byte

	mu     sync.Mutex
	fds    []*os.File
	closed bool
}

// Read reads with recvmsg, keeping the descriptors that come along
// (received close-on-exec, so that no child of the daemon inherits them).
func (c *FDConn) Read(p []byte) (int, error) {
	if c.oob == nil {
		c.oob = make([]byte, unix.CmsgSpace(fdpass.MaxFiles*4))
	}
	n, oobn, flags, _, err := c.ReadMsgUnix(p, c.oob)
	if n < 0 {
		// ReadMsgUnix passes recvmsg's -1 on through with an error (a
		// read deadline the HTTP server sets to end a background read,
		// a reset): io.Reader's contract is 0 <= n.
		n = 0
	}
	if oobn > 0 {
		c.keep(c.oob[:oobn])
	}
	if flags&unix.MSG_CTRUNC != 0 {
		// The kernel closed what did not fit; the count will not match.
		slog.Debug("API: descriptors sent beyond the limit were dropped", "max", fdpass.MaxFiles)
	}
	if errors.Is(err, io.EOF) || (n == 0 && err == nil && len(p) > 0) {
		// ReadMsgUnix wraps the end of the stream in a *net.OpError
		// where Read returns io.EOF itself, which is what its readers
		// compare with: a client's end of stdin (CloseWrite on an
		// attach) must read as EOF.
		return n, io.EOF
	}
	return n, err
}

func (c *FDConn) keep(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	var got []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			got = append(got, os.NewFile(uintptr(fd), "passed"))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range got {
		if c.closed || len(c.fds) >= fdpass.MaxFiles {
			f.Close()
			continue
		}
		c.fds = append(c.fds, f)
	}
}

// take returns the descriptors kept so far; the caller owns them.
func (c *FDConn) take() []*os.File {
	c.mu.Lock()
	defer c.mu.Unlock()
	fds := c.fds
	c.fds = nil
	return fds
}

// Close closes the connection and the descriptors nobody took.
func (c *FDConn) Close() error {
	c.mu.Lock()
	c.closed = true
	fds := c.fds
	c.fds = nil
	c.mu.Unlock()
	for _, f := range fds {
		f.Close()
	}
	return c.UnixConn.Close()
}

type connKey struct{}

// WithConn records the request's connection in ctx (the server's
// ConnContext), for TakeFiles.
func WithConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// TakeFiles returns the descriptors the client sent on the request's
// connection, all of them, which the caller then owns. It fails with
// fdpass.ErrNotUnix when the connection cannot carry descriptors.
func TakeFiles(ctx context.Context) ([]*os.File, error) {
	c, ok := ctx.Value(connKey{}).(*FDConn)
	if !ok {
		return nil, fdpass.ErrNotUnix
	}
	return c.take(), nil
}
