package httputils

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/docker/docker/pkg/stdcopy"
)

// Stream is a hijacked attach or exec connection.
//
// It notices a client that went away: a write that fails, a read that
// fails with an error other than EOF, or a hangup of the connection (see
// hangups; EOF alone is the client's half-close, the end of its stdin).
// Then it calls the onGone given to Hijack, once, and closes the
// connection, so that whoever streams to it can stop and let go of what it
// holds for it.
type Stream struct {
	conn   net.Conn
	buf    *bufio.Reader
	Stdin  io.ReadCloser
	Stdout io.Writer
	Stderr io.Writer

	onGone    func()
	goneOnce  sync.Once
	gone      chan struct{}
	mu        sync.Mutex // guards stopWatch: a hangup may come before watch returns
	stopWatch func()
	closeOnce sync.Once
	closeErr  error
}

// Close ends the connection; it may be called more than once.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		stop := s.stopWatch
		s.mu.Unlock()
		stop()
		s.closeErr = s.conn.Close()
	})
	return s.closeErr
}

// Gone is closed once the client is known to have gone away.
func (s *Stream) Gone() <-chan struct{} { return s.gone }

func (s *Stream) markGone() {
	s.goneOnce.Do(func() {
		close(s.gone)
		if s.onGone != nil {
			s.onGone()
		}
		s.Close()
	})
}

// Hijack takes over the client's connection for a raw stream, answering the
// upgrade handshake Docker clients expect. Without a tty, output is
// multiplexed with stdcopy headers so stdout and stderr stay apart.
// onGone, if not nil, is called once when the client went away.
func Hijack(w http.ResponseWriter, r *http.Request, tty bool, onGone func()) (*Stream, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, fmt.Errorf("connection cannot be hijacked")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, fmt.Errorf("hijack connection: %w", err)
	}
	contentType := "application/vnd.docker.raw-stream"
	if !tty {
		contentType = "application/vnd.docker.multiplexed-stream"
	}
	s := &Stream{conn: conn, buf: rw.Reader, onGone: onGone, gone: make(chan struct{})}
	s.mu.Lock()
	s.stopWatch = hangups.watch(conn, s.markGone)
	s.mu.Unlock()
	out := &streamWriter{s: s}
	upgrade := strings.EqualFold(r.Header.Get("Upgrade"), "tcp") ||
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
	if upgrade {
		fmt.Fprintf(out, "HTTP/1.1 101 UPGRADED\r\nContent-Type: %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n", contentType)
	} else {
		fmt.Fprintf(out, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n\r\n", contentType)
	}
	s.Stdin = &stdinReader{s: s}
	if tty {
		s.Stdout = out
		s.Stderr = out
	} else {
		s.Stdout = stdcopy.NewStdWriter(out, stdcopy.Stdout)
		s.Stderr = stdcopy.NewStdWriter(out, stdcopy.Stderr)
	}
	return s, nil
}

// streamWriter writes to the connection; a failed write means the client
// is gone.
type streamWriter struct{ s *Stream }

func (w *streamWriter) Write(p []byte) (int, error) {
	n, err := w.s.conn.Write(p)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		w.s.markGone()
	}
	return n, err
}

// stdinReader reads what the client sends after the handshake, starting
// with anything the HTTP server had already buffered. Close half-closes
// nothing: the connection as a whole is closed by the stream's owner.
type stdinReader struct{ s *Stream }

func (r *stdinReader) Read(p []byte) (int, error) {
	var n int
	var err error
	if r.s.buf != nil && r.s.buf.Buffered() > 0 {
		n, err = r.s.buf.Read(p)
	} else {
		n, err = r.s.conn.Read(p)
	}
	if err != nil && err != io.EOF && !errors.Is(err, net.ErrClosed) {
		// A reset: the client is gone. EOF is its half-close, and a
		// closed connection is ours.
		r.s.markGone()
	}
	return n, err
}

func (r *stdinReader) Close() error {
	if cw, ok := r.s.conn.(interface{ CloseRead() error }); ok {
		return cw.CloseRead()
	}
	return nil
}
