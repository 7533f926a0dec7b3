// Package stream is the CRI's streaming server: the HTTP endpoint that
// `crictl exec -it`, `kubectl attach` and `kubectl port-forward` reach
// through the URLs that the CRI's Exec, Attach and PortForward answer.
// k8s.io/cri-streaming speaks the protocols (SPDY, websocket); this
// package only connects its streams to the engine's exec, attach and to
// the pods' network namespaces.
package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/sdengine/engine/api/server/backend"
)

// Backend is the part of the engine's API backend that streams: the same
// calls that serve the Docker API's exec and attach.
type Backend interface {
	ExecCreate(ctx context.Context, name string, cfg *containertypes.ExecOptions) (string, error)
	ExecStart(ctx context.Context, id string, opts containertypes.ExecStartOptions, out backend.StreamFunc) error
	ExecInspect(ctx context.Context, id string) (*backend.ExecInspect, error)
	ExecResize(ctx context.Context, id string, height, width uint) error
	ContainerAttach(ctx context.Context, name string, cfg backend.AttachConfig, out backend.StreamFunc) error
	ContainerResize(ctx context.Context, name string, height, width uint) error
}

// NetNSFunc gives the path of a pod's network namespace; "" is the host's.
type NetNSFunc func(podID string) (string, error)

// Server is the streaming server: it hands out URLs (GetExec, GetAttach,
// GetPortForward, for the CRI) and serves them.
type Server struct {
	streaming.Server
	l    net.Listener
	http *http.Server
}

// New listens on addr ("127.0.0.1:0" takes a port of the kernel's) and
// prepares the server; Serve serves it. Listening here, not in Serve,
// means the URLs handed out carry the port actually bound, even before
// Serve runs.
func New(addr string, b Backend, netns NetNSFunc) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cri stream: %w", err)
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = l.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: l.Addr().String()}
	s, err := streaming.NewServer(cfg, &runtime{b: b, netns: netns})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("cri stream: %w", err)
	}
	// No write or idle timeouts: a stream lasts as long as its session;
	// cri-streaming ends idle ones itself (StreamIdleTimeout).
	return &Server{Server: s, l: l, http: &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Serve answers streaming requests until ctx ends, then closes the
// listener and every open session.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.http.Close() })
	defer stop()
	if err := s.http.Serve(s.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("cri stream: serve: %w", err)
	}
	return nil
}

// Close stops the server (for one that was never served, its listener).
func (s *Server) Close() error {
	err := s.http.Close()
	s.l.Close()
	return err
}

// runtime is cri-streaming's Runtime on top of the engine.
type runtime struct {
	b     Backend
	netns NetNSFunc
}

// Exec runs cmd in the container with the client's streams, as `docker
// exec` does. A non-zero exit is returned as a utilexec.ExitError: that is
// what cri-streaming turns into the status that makes `crictl exec` and
// `kubectl exec` exit with the same code.
func (r *runtime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	id, err := r.b.ExecCreate(ctx, containerID, &containertypes.ExecOptions{
		Cmd: cmd, Tty: tty,
		AttachStdin: in != nil, AttachStdout: out != nil,
		// A terminal has one output: stderr is in it.
		AttachStderr: errw != nil && !tty,
	})
	if err != nil {
		return fmt.Errorf("exec create: %w", err)
	}
	done := make(chan struct{})
	defer close(done)
	go followResize(resize, done, func(h, w uint) error { return r.b.ExecResize(ctx, id, h, w) })
	streams := clientStreams{in: in, out: out, err: errw}
	// ExecStart returns once the process exited. What failed after the
	// start (the runtime could not run cmd) it writes on the stream and
	// records as the exit code (126, 127), as for docker exec.
	if err := r.b.ExecStart(ctx, id, containertypes.ExecStartOptions{Tty: tty}, streams.streamFunc); err != nil {
		return fmt.Errorf("exec start: %w", err)
	}
	st, err := r.b.ExecInspect(ctx, id)
	if err != nil {
		return fmt.Errorf("exec inspect: %w", err)
	}
	if st.ExitCode == nil {
		return fmt.Errorf("exec %s ended without an exit code", id)
	}
	if *st.ExitCode != 0 {
		// Returned as is, not wrapped: cri-streaming asserts the type.
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", *st.ExitCode), Code: *st.ExitCode}
	}
	return nil
}

// Attach connects the client to the container's process: its output
// from now on, and its stdin if the container was created with stdin open
// (the engine checks that). It ends when the container's output ends or
// the client is gone.
func (r *runtime) Attach(ctx context.Context, containerID string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	// After the upgrade the request's context no longer ends with the
	// connection: a failed write or read on the client's streams does.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go followResize(resize, done, func(h, w uint) error { return r.b.ContainerResize(ctx, containerID, h, w) })
	streams := clientStreams{in: in, out: out, err: errw, onGone: cancel}
	cfg := backend.AttachConfig{Stdin: in != nil, Stdout: out != nil, Stderr: errw != nil && !tty, Stream: true}
	if err := r.b.ContainerAttach(ctx, containerID, cfg, streams.streamFunc); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	return nil
}

// resizeRetry bounds how long a size is retried: the first one often
// comes before the exec's process exists.
const resizeRetry = 2 * time.Second

// followResize applies the client's terminal sizes until done. A size that
// cannot be applied yet (the process is starting) is retried; a newer size
// replaces it. The channel is always drained, as cri-streaming's sender
// blocks on it.
func followResize(sizes <-chan remotecommand.TerminalSize, done <-chan struct{}, apply func(h, w uint) error) {
	if sizes == nil {
		return
	}
	var (
		pending  *remotecommand.TerminalSize
		deadline time.Time
		retry    <-chan time.Time
	)
	for {
		select {
		case <-done:
			return
		case sz, ok := <-sizes:
			if !ok {
				sizes = nil
				if pending == nil {
					return
				}
				continue
			}
			pending, deadline = &sz, time.Now().Add(resizeRetry)
		case <-retry:
		}
		retry = nil
		if pending == nil {
			continue
		}
		if err := apply(uint(pending.Height), uint(pending.Width)); err == nil || time.Now().After(deadline) {
			pending = nil
			if sizes == nil {
				return
			}
			continue
		}
		retry = time.After(20 * time.Millisecond)
	}
}

// clientStreams hands the client's streams to the engine as a
// backend.StreamFunc, the way the Docker API hands a hijacked connection.
type clientStreams struct {
	in       io.Reader
	out, err io.WriteCloser
	// onGone, if set, is called when a stream fails: the client is gone.
	onGone func()
	once   sync.Once
}

func (c *clientStreams) streamFunc(tty bool) (io.ReadCloser, io.Writer, io.Writer, error) {
	var stdout, stderr io.Writer
	if c.out != nil {
		stdout = &goneWriter{w: c.out, c: c}
	}
	if c.err != nil && !tty {
		stderr = &goneWriter{w: c.err, c: c}
	}
	// The engine closes stdin when it is done: cri-streaming closes the
	// streams themselves once Exec or Attach returns.
	return &goneReader{r: c.in, c: c}, stdout, stderr, nil
}

func (c *clientStreams) gone() {
	if c.onGone != nil {
		c.once.Do(c.onGone)
	}
}

type goneReader struct {
	r io.Reader
	c *clientStreams
}

func (g *goneReader) Read(p []byte) (int, error) {
	if g.r == nil {
		return 0, io.EOF
	}
	n, err := g.r.Read(p)
	// EOF is the client closing its stdin, not leaving: output goes on.
	if err != nil && !errors.Is(err, io.EOF) {
		g.c.gone()
	}
	return n, err
}

func (g *goneReader) Close() error { return nil }

type goneWriter struct {
	w io.Writer
	c *clientStreams
}

func (g *goneWriter) Write(p []byte) (int, error) {
	n, err := g.w.Write(p)
	if err != nil {
		g.c.gone()
	}
	return n, err
}
