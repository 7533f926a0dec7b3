package hooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options says which hooks to run and how.
type Options struct {
	Phase      string   // Prestart or Poststop
	ConfigPath string   // the container's OCI config.json, the hooks' 2nd argument
	Hooks      []string // in lexical order; Run reverses them for Poststop
	State      []byte   // the OCI state JSON, each hook's stdin
	// Timeout per hook; zero means Timeout(Phase).
	Timeout time.Duration
}

// HookError is one hook that failed or ran out of time.
type HookError struct {
	Hook     string // the hook's file name
	Phase    string
	Err      error
	Stderr   string // the end of what the hook wrote to stderr
	TimedOut bool
}

func (e *HookError) Error() string {
	var b strings.Builder
	if e.TimedOut {
		fmt.Fprintf(&b, "%s hook %q timed out and was killed: %v", e.Phase, e.Hook, e.Err)
	} else {
		fmt.Fprintf(&b, "%s hook %q failed: %v", e.Phase, e.Hook, e.Err)
	}
	if e.Stderr != "" {
		fmt.Fprintf(&b, ": %s", e.Stderr)
	}
	return b.String()
}

func (e *HookError) Unwrap() error { return e.Err }

// stderrTail bounds how much of a hook's stderr goes into an error.
const stderrTail = 4096

// Run runs the hooks of one phase. Prestart stops at the first failure
// and returns it; Poststop runs every hook whatever happens and returns
// all failures joined (each a *HookError).
func Run(ctx context.Context, o Options) error {
	order := slices.Clone(o.Hooks)
	if o.Phase == Poststop {
		slices.Reverse(order)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = Timeout(o.Phase)
	}
	var errs []error
	for _, h := range order {
		if err := runOne(ctx, h, o, timeout); err != nil {
			if o.Phase != Poststop {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runOne runs a hook with its stdio on memory files rather than pipes: a
// background process a hook leaves behind cannot then hold up our wait.
func runOne(ctx context.Context, hook string, o Options, timeout time.Duration) error {
	herr := &HookError{Hook: filepath.Base(hook), Phase: o.Phase}
	stdin, err := memFile("hook-state", o.State)
	if err != nil {
		herr.Err = err
		return herr
	}
	defer stdin.Close()
	stderr, err := memFile("hook-stderr", nil)
	if err != nil {
		herr.Err = err
		return herr
	}
	defer stderr.Close()

	cmd := &exec.Cmd{
		Path:   hook,
		Args:   []string{hook, o.Phase, o.ConfigPath},
		Env:    []string{"container=docker"},
		Stdin:  stdin,
		Stderr: stderr, // stdout goes to /dev/null
		// Its own process group, so a timeout kills what it spawned too.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if o.ConfigPath != "" {
		cmd.Dir = filepath.Dir(o.ConfigPath) // the bundle
	}
	if err := cmd.Start(); err != nil {
		herr.Err = err
		return herr
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		herr.TimedOut = true
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		<-done
		err = fmt.Errorf("no exit after %s", timeout)
	case <-ctx.Done():
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		<-done
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	herr.Err = err
	herr.Stderr = tail(stderr)
	return herr
}

// memFile is an anonymous in-memory file holding data, positioned at 0.
func memFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if len(data) > 0 {
		_, err := f.Write(data)
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// tail returns the last stderrTail bytes of f, trimmed.
func tail(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := fi.Size() - stderrTail
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, stderrTail))
	return strings.TrimSpace(string(b))
}
