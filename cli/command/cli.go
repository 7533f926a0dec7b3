// Package command holds what every docker CLI command shares: the streams,
// the lazily created API client, exit-status errors and raw API access.
package command

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"github.com/moby/term"
)

// Cli is the context handed to every command.
type Cli struct {
	in  *InStream
	out *OutStream
	err io.Writer

	// Host is the -H/--host value; empty means DOCKER_HOST or the default socket.
	Host string
	// TLS is the --tls* flags.
	TLS TLSOptions

	once      sync.Once
	client    *client.Client
	clientErr error
}

// NewCli wraps the process streams.
func NewCli(in io.ReadCloser, out, errOut io.Writer) *Cli {
	return &Cli{in: newInStream(in), out: newOutStream(out), err: errOut, TLS: DefaultTLSOptions()}
}

// In is the standard input.
func (c *Cli) In() *InStream { return c.in }

// Out is the standard output.
func (c *Cli) Out() *OutStream { return c.out }

// Err is the standard error.
func (c *Cli) Err() io.Writer { return c.err }

// Client returns the API client, created on first use so that --help and
// usage errors never need a daemon. Version negotiation makes the client
// speak the daemon's API version (docker.io 20.10 speaks 1.41).
//
// The host is -H, else DOCKER_HOST, else the default socket, or with TLS
// on tcp://localhost:2376; TLS comes from the --tls* flags and their
// environment (TLSOptions), as in the docker CLI: DOCKER_CERT_PATH alone
// does not turn it on (the Go SDK's client.FromEnv would).
func (c *Cli) Client() (*client.Client, error) {
	c.once.Do(func() {
		tlsConf, err := c.TLS.ClientConfig()
		if err != nil {
			c.clientErr = fmt.Errorf("Failed to initialize: unable to resolve docker endpoint: %w", err)
			return
		}
		host := c.Host
		if host == "" {
			host = os.Getenv(client.EnvOverrideHost)
		}
		if host == "" {
			host = client.DefaultDockerHost
			if tlsConf != nil {
				host = DefaultTLSHost
			}
		}
		var opts []client.Opt
		if tlsConf != nil {
			// Before WithHost, which gives this transport its dialer.
			opts = append(opts, client.WithHTTPClient(&http.Client{
				Transport: &http.Transport{
					TLSClientConfig: tlsConf,
					MaxIdleConns:    6,
					IdleConnTimeout: 30 * time.Second,
				},
				CheckRedirect: client.CheckRedirect,
			}))
		}
		opts = append(opts, client.WithHost(host), client.WithVersionFromEnv(), client.WithAPIVersionNegotiation())
		c.client, c.clientErr = client.NewClientWithOpts(opts...)
		if c.clientErr != nil {
			c.clientErr = fmt.Errorf("creating API client: %w", c.clientErr)
			return
		}
		if tlsConf != nil {
			tlsClients.Store(c.client, struct{}{})
		}
	})
	return c.client, c.clientErr
}

// Close releases the client's idle connections.
func (c *Cli) Close() {
	if c.client != nil {
		_ = c.client.Close()
	}
}

// InStream is stdin with its terminal state.
type InStream struct {
	io.ReadCloser
	fd    uintptr
	isTTY bool
	state *term.State
}

func newInStream(r io.ReadCloser) *InStream {
	s := &InStream{ReadCloser: r}
	s.fd, s.isTTY = term.GetFdInfo(r)
	return s
}

// IsTerminal reports whether stdin is a terminal.
func (s *InStream) IsTerminal() bool { return s.isTTY }

// SetRawTerminal puts stdin in raw mode so that keys (^C included) go to the
// container's terminal instead of being handled locally.
func (s *InStream) SetRawTerminal() error {
	if !s.isTTY {
		return nil
	}
	st, err := term.SetRawTerminal(s.fd)
	if err != nil {
		return fmt.Errorf("set raw terminal: %w", err)
	}
	s.state = st
	return nil
}

// RestoreTerminal undoes SetRawTerminal.
func (s *InStream) RestoreTerminal() {
	if s.state != nil {
		_ = term.RestoreTerminal(s.fd, s.state)
		s.state = nil
	}
}

// OutStream is stdout with its terminal state.
type OutStream struct {
	io.Writer
	fd    uintptr
	isTTY bool
	state *term.State
}

func newOutStream(w io.Writer) *OutStream {
	s := &OutStream{Writer: w}
	s.fd, s.isTTY = term.GetFdInfo(w)
	return s
}

// FD is the descriptor (for jsonmessage progress rendering).
func (s *OutStream) FD() uintptr { return s.fd }

// IsTerminal reports whether stdout is a terminal.
func (s *OutStream) IsTerminal() bool { return s.isTTY }

// SetRawTerminal disables output post-processing (\n -> \r\n) because the
// container's pty already does it.
func (s *OutStream) SetRawTerminal() error {
	if !s.isTTY {
		return nil
	}
	st, err := term.SetRawTerminalOutput(s.fd)
	if err != nil {
		return fmt.Errorf("set raw terminal output: %w", err)
	}
	s.state = st
	return nil
}

// RestoreTerminal undoes SetRawTerminal.
func (s *OutStream) RestoreTerminal() {
	if s.state != nil {
		_ = term.RestoreTerminal(s.fd, s.state)
		s.state = nil
	}
}

// TerminalSize returns the output terminal's size (0, 0 if not a terminal).
func (s *OutStream) TerminalSize() (height, width uint) {
	if !s.isTTY {
		return 0, 0
	}
	ws, err := term.GetWinsize(s.fd)
	if err != nil {
		return 0, 0
	}
	return uint(ws.Height), uint(ws.Width)
}
