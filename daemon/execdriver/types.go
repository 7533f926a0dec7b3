package execdriver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/daemon/logger"
)

// CreateOptions describes a container to create.
type CreateOptions struct {
	ID                          string
	Spec                        *specs.Spec
	Tty, OpenStdin, StdinOnce   bool
	ConsoleHeight, ConsoleWidth uint16
	Log                         logger.Info // the log driver and what it needs
	// ExtraFiles become the first process's fds 3, 4, ... (socket
	// activation, --preserve-fds). The driver passes its own copies on;
	// the caller keeps and closes these.
	ExtraFiles []*os.File
}

// ExecOptions describes a process to run in a running container.
type ExecOptions struct {
	Args, Env                   []string
	Cwd                         string
	UID, GID                    uint32
	AdditionalGids              []uint32
	Tty, Privileged             bool
	ConsoleHeight, ConsoleWidth uint16
	Streams                     Streams
}

// Streams are a client's side of a container's or exec's stdio.
type Streams struct {
	Stdin          io.ReadCloser
	Stdout, Stderr io.Writer
}

// ExitStatus is how a container's init process ended.
type ExitStatus struct {
	Code      int       `json:"code"`
	ExitedAt  time.Time `json:"exitedAt"`
	OOMKilled bool      `json:"oomKilled,omitempty"`
}

// StartError is a process (a container's or an exec's) that could not be
// started. Code is the exit code that reports it, as Docker's: 127 the
// command was not found, 126 it could not be executed, 125 the engine
// failed to start it.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// StartExitCode is the exit code that reports err, a failure to start a
// process: a StartError's code, or 125 when the failure came before (or
// outside) the start itself.
func StartExitCode(err error) int {
	var se *StartError
	if errors.As(err, &se) {
		return se.Code
	}
	return 125
}

// ExitedError is returned (wrapped) by Restore when the container exited
// while nobody was watching; Status is what the shim recorded.
type ExitedError struct {
	Status ExitStatus
}

func (e *ExitedError) Error() string {
	return fmt.Sprintf("container exited with code %d at %s", e.Status.Code, e.Status.ExitedAt.Format(time.RFC3339Nano))
}

// NotStartedError is returned (wrapped) by Restore when the container was
// created but its process was never let run: the daemon that created it
// died between Driver.Create and Task.Start. The start never happened; the
// daemon rolls it back with Delete.
type NotStartedError struct {
	Pid int // the init process waiting to be let run
}

func (e *NotStartedError) Error() string {
	return fmt.Sprintf("container was created (init pid %d) but never started", e.Pid)
}
