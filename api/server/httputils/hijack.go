package httputils

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/docker/docker/pkg/stdcopy"
)

// Stream is a hijacked attach or exec connection.
type Stream struct {
	conn   net.Conn
	buf    *bufio.Reader
	Stdin  io.ReadCloser
	Stdout io.Writer
	Stderr io.Writer
}

// Close ends the connection.
func (s *Stream) Close() error { return s.conn.Close() }

// Hijack takes over the client's connection for a raw stream, answering the
// upgrade handshake Docker clients expect. Without a tty, output is
// multiplexed with stdcopy headers so stdout and stderr stay apart.
func Hijack(w http.ResponseWriter, r *http.Request, tty bool) (*Stream, error) {
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
	upgrade := strings.EqualFold(r.Header.Get("Upgrade"), "tcp") ||
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
	if upgrade {
		fmt.Fprintf(conn, "HTTP/1.1 101 UPGRADED\r\nContent-Type: %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n", contentType)
	} else {
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n\r\n", contentType)
	}
	s := &Stream{conn: conn, buf: rw.Reader}
	s.Stdin = &stdinReader{s: s}
	if tty {
		s.Stdout = conn
		s.Stderr = conn
	} else {
		s.Stdout = stdcopy.NewStdWriter(conn, stdcopy.Stdout)
		s.Stderr = stdcopy.NewStdWriter(conn, stdcopy.Stderr)
	}
	return s, nil
}

// stdinReader reads what the client sends after the handshake, starting
// with anything the HTTP server had already buffered. Close half-closes
// nothing: the connection as a whole is closed by the stream's owner.
type stdinReader struct{ s *Stream }

func (r *stdinReader) Read(p []byte) (int, error) {
	if r.s.buf != nil && r.s.buf.Buffered() > 0 {
		return r.s.buf.Read(p)
	}
	return r.s.conn.Read(p)
}

func (r *stdinReader) Close() error {
	if cw, ok := r.s.conn.(interface{ CloseRead() error }); ok {
		return cw.CloseRead()
	}
	return nil
}
