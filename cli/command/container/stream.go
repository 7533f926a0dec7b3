// Package container implements the docker container commands (run, create,
// start, attach, ps, logs, exec, ...) on top of the Engine API client.
package container

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/sdengine/engine/cli/command"
	"golang.org/x/sys/unix"
)

// streams says which local streams are wired to an attach/exec connection.
type streams struct {
	tty    bool
	stdin  io.Reader // nil: stdin not attached
	stdout io.Writer // nil: discard
	stderr io.Writer // nil: discard
}

// pump copies a hijacked connection until the remote output ends. Output is
// demultiplexed with stdcopy unless a tty is used (then it is a raw byte
// stream). It does not wait for stdin: a terminal read may block forever
// after the container is gone.
func pump(cli *command.Cli, resp types.HijackedResponse, s streams) error {
	if s.tty && s.stdin != nil {
		if err := cli.In().SetRawTerminal(); err != nil {
			return err
		}
		defer cli.In().RestoreTerminal()
		if err := cli.Out().SetRawTerminal(); err != nil {
			return err
		}
		defer cli.Out().RestoreTerminal()
	}
	stdout, stderr := s.stdout, s.stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	outDone := make(chan error, 1)
	go func() {
		var err error
		if s.tty {
			_, err = io.Copy(stdout, resp.Reader)
		} else {
			_, err = stdcopy.StdCopy(stdout, stderr, resp.Reader)
		}
		outDone <- err
	}()
	if s.stdin != nil {
		go func() {
			if _, err := io.Copy(resp.Conn, s.stdin); err != nil {
				slog.Debug("copying stdin", "err", err)
			}
			// Half-close so the container sees EOF on its stdin while we keep
			// reading its output.
			if err := resp.CloseWrite(); err != nil {
				slog.Debug("closing attach stdin", "err", err)
			}
		}()
	}
	err := <-outDone
	if err != nil && isClosedConnErr(err) {
		err = nil
	}
	return err
}

func isClosedConnErr(err error) bool {
	return strings.Contains(err.Error(), "use of closed network connection")
}

// resizeFunc sends a terminal size to a container or exec.
type resizeFunc func(ctx context.Context, opts container.ResizeOptions) error

// monitorTTYSize sends the local terminal size now and on every SIGWINCH
// until ctx ends. The first resize is retried briefly because the process
// may not have its pty yet right after start.
func monitorTTYSize(ctx context.Context, cli *command.Cli, resize resizeFunc) {
	send := func() error {
		h, w := cli.Out().TerminalSize()
		if h == 0 && w == 0 {
			return nil
		}
		return resize(ctx, container.ResizeOptions{Height: h, Width: w})
	}
	for i := 0; i < 5; i++ {
		if err := send(); err == nil {
			break
		}
		time.Sleep(time.Duration(i+1) * 10 * time.Millisecond)
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGWINCH)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				_ = send()
			}
		}
	}()
}

// proxySignals forwards the signals this process receives to the container,
// like docker's --sig-proxy, until ctx ends.
func proxySignals(ctx context.Context, c *client.Client, id string) {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-ch:
				sig, ok := s.(unix.Signal)
				// SIGCHLD/SIGPIPE/SIGURG/SIGWINCH concern this process only.
				if !ok || sig == unix.SIGCHLD || sig == unix.SIGPIPE || sig == unix.SIGURG || sig == unix.SIGWINCH {
					continue
				}
				if err := c.ContainerKill(ctx, id, strconv.Itoa(int(sig))); err != nil {
					slog.Debug("forwarding signal", "signal", sig, "err", err)
				}
			}
		}
	}()
}

// stopOnSignal is a unit's `systemctl stop` for a container run under
// it: SIGTERM (or SIGINT) stops the container the way `docker stop` does,
// with the container's own stop signal (SIGRTMIN+3 for systemd) and
// timeout, instead of passing SIGTERM on, which systemd takes as a
// request to re-execute itself. Other signals are passed on.
func stopOnSignal(ctx context.Context, c *client.Client, id string, relay *notifyRelay) {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch)
	go func() {
		defer signal.Stop(ch)
		stopping := false
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-ch:
				sig, ok := s.(unix.Signal)
				if !ok || sig == unix.SIGCHLD || sig == unix.SIGPIPE || sig == unix.SIGURG || sig == unix.SIGWINCH {
					continue
				}
				if sig != unix.SIGTERM && sig != unix.SIGINT {
					if err := c.ContainerKill(ctx, id, strconv.Itoa(int(sig))); err != nil {
						slog.Debug("forwarding signal", "signal", sig, "err", err)
					}
					continue
				}
				if stopping {
					continue
				}
				stopping = true
				relay.stopping()
				go func() {
					if err := c.ContainerStop(ctx, id, container.StopOptions{}); err != nil {
						slog.Warn("stop on "+sig.String(), "id", id, "err", err)
					}
				}()
			}
		}
	}()
}

// waitExit starts waiting for the container before it is started, so that
// a fast exit is never missed; with autoRemove it waits for the removal,
// so that "docker run --rm" returns only once the container is gone.
func waitExit(ctx context.Context, c *client.Client, id string, autoRemove bool) <-chan int {
	cond := container.WaitConditionNextExit
	if autoRemove {
		cond = container.WaitConditionRemoved
	}
	resC, errC := c.ContainerWait(ctx, id, cond)
	out := make(chan int, 1)
	go func() {
		select {
		case r := <-resC:
			if r.Error != nil && r.Error.Message != "" {
				slog.Debug("wait error", "msg", r.Error.Message)
			}
			out <- int(r.StatusCode)
		case err := <-errC:
			slog.Debug("wait failed", "err", err)
			out <- 125
		}
	}()
	return out
}

// startErrorStatus maps a start failure to docker's exit status: 127 when
// the command does not exist, 126 when it cannot be run, 125 otherwise.
func startErrorStatus(err error) int {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "executable file not found"),
		strings.Contains(msg, "no such file or directory"),
		strings.Contains(msg, "system cannot find the file specified"):
		return 127
	case strings.Contains(msg, "permission denied"):
		return 126
	}
	return 125
}
