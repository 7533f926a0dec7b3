package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/client"
)

// Engine is one container engine under test, driven through its own CLI
// and (when it has one) its Docker-compatible API socket.
type Engine struct {
	Name    string
	CLI     string   // the engine's own command line tool
	Globals []string // flags every CLI call carries (socket, private paths)
	Env     []string // extra environment for CLI and daemon
	Socket  string   // Docker-compatible API socket
	BaseDir string   // private persistent state, removed at the end
	RunDir  string   // private runtime state, removed at the end

	// DefaultNet is the argument that gives a container the engine's
	// default (bridge) network; nil when the engine has none yet.
	DefaultNet []string

	settle bool // timed samples wait for a quiet host (-settle)

	// ready, when set, says the daemon is up instead of a Docker API ping
	// (containerd has no Docker API).
	ready func(ctx context.Context) error

	daemonArgv []string // the daemon (or API service) to start
	daemon     *exec.Cmd
	exited     chan struct{}
	logPath    string
	api        *client.Client
}

// cmd builds a CLI invocation with the engine's global flags.
func (e *Engine) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, e.CLI, append(append([]string{}, e.Globals...), args...)...)
	c.Env = append(os.Environ(), e.Env...)
	return c
}

// run runs a CLI command and returns its trimmed stdout; stderr goes into
// the error so a failed measurement says why.
func (e *Engine) run(ctx context.Context, args ...string) (string, error) {
	c := e.cmd(ctx, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", e.Name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// timed runs a CLI command, once the host is quiet (sampleStart), and
// returns its wall time in milliseconds.
func (e *Engine) timed(ctx context.Context, args ...string) (float64, error) {
	t0 := sampleStart(e)
	_, err := e.run(ctx, args...)
	return ms(time.Since(t0)), err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// start launches the engine's daemon (for Podman: its API service) with
// output in a log file, and waits until the API answers.
func (e *Engine) start(ctx context.Context) error {
	for _, d := range []string{e.BaseDir, e.RunDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	e.logPath = filepath.Join(e.BaseDir, "daemon.log")
	lf, err := os.Create(e.logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	c := exec.Command(e.daemonArgv[0], e.daemonArgv[1:]...)
	c.Env = append(os.Environ(), e.Env...)
	c.Stdout, c.Stderr = lf, lf
	// Own process group: a ^C to the benchmark must not kill the daemons
	// before the clean-up has stopped their containers.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start %s: %w", e.Name, err)
	}
	e.daemon = c
	e.exited = make(chan struct{})
	go func() { _ = c.Wait(); close(e.exited) }()
	slog.Info("started", "engine", e.Name, "pid", c.Process.Pid, "log", e.logPath)

	if e.ready != nil {
		return e.waitReady(ctx)
	}
	e.api, err = client.NewClientWithOpts(client.WithHost("unix://"+e.Socket), client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := e.api.Ping(pctx)
		cancel()
		if err == nil {
			e.api.NegotiateAPIVersion(ctx)
			return nil
		}
		select {
		case <-e.exited:
			return fmt.Errorf("%s exited at start; see %s: %s", e.Name, e.logPath, tail(e.logPath))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s API not answering on %s: %w", e.Name, e.Socket, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitReady polls e.ready until it succeeds, the daemon exits or a minute
// has passed.
func (e *Engine) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := e.ready(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-e.exited:
			return fmt.Errorf("%s exited at start; see %s: %s", e.Name, e.logPath, tail(e.logPath))
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready: %w", e.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the daemon we started, by its PID: SIGTERM, then SIGKILL.
func (e *Engine) stop() {
	if e.daemon == nil {
		return
	}
	pid := e.daemon.Process.Pid
	_ = e.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(45 * time.Second):
		slog.Warn("daemon did not stop on SIGTERM, killing", "engine", e.Name, "pid", pid)
		_ = e.daemon.Process.Kill()
		<-e.exited
	}
	e.daemon = nil
}

func (e *Engine) daemonPID() int {
	if e.daemon == nil {
		return 0
	}
	return e.daemon.Process.Pid
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// forceRemove removes containers without waiting for a stop timeout
// (Podman's `rm -f` first waits 10 s for SIGTERM, which `sleep` as PID 1
// ignores; the other CLIs kill at once).
func (e *Engine) forceRemove(ctx context.Context, ids ...string) error {
	a := []string{"rm", "-f"}
	if e.Name == "podman" {
		a = append(a, "-t", "0")
	}
	_, err := e.run(ctx, append(a, ids...)...)
	return err
}
