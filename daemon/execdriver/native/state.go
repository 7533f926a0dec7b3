package native

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/pkg/atomicfile"
)

// Files in a container's state directory.
const (
	specFile    = "config.json" // the OCI bundle's spec (the shim's cwd is the bundle)
	optionsFile = "shim.json"   // shimOptions
	exitFile    = "exit.json"   // ExitStatus, written once the container exited
	shimPidFile = "shim.pid"
	shimLogFile = "shim.log"
)

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

// shimOptions is what the daemon tells the shim besides the spec.
type shimOptions struct {
	ID            string      `json:"id"`
	Tty           bool        `json:"tty,omitempty"`
	OpenStdin     bool        `json:"openStdin,omitempty"`
	StdinOnce     bool        `json:"stdinOnce,omitempty"`
	ConsoleHeight uint16      `json:"consoleHeight,omitempty"`
	ConsoleWidth  uint16      `json:"consoleWidth,omitempty"`
	Log           logger.Info `json:"log"`
	ConsolePTY    bool        `json:"consolePTY,omitempty"`
	SystemdCgroup bool        `json:"systemdCgroup,omitempty"`
}

// writeJSONFile replaces path durably: used for the exit status, which
// must survive a crash of everything but the disk.
func writeJSONFile(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// writeFileQuick replaces path atomically (readers never see a partial
// file) but without fsync: for state that is worthless after a reboot
// anyway, and creating a container should not wait for the disk.
func writeFileQuick(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func writeJSONQuick(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileQuick(path, b)
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	return nil
}

// readExit returns the recorded exit status, or nil if there is none.
func readExit(dir string) (*ExitStatus, error) {
	var st ExitStatus
	if err := readJSONFile(filepath.Join(dir, exitFile), &st); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return &st, nil
}

// liveShimPid returns the pid of the shim serving dir if it is still
// running, checked against its command line so that a recycled pid is
// not mistaken for it; 0 otherwise.
func liveShimPid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, shimPidFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return 0
	}
	args := strings.Split(string(cmdline), "\x00")
	if len(args) < 3 || args[1] != ShimCommand || args[2] != dir {
		return 0
	}
	// A zombie still has its cmdline cleared; a dead-but-unreaped shim
	// (our own child not yet waited for) reads as empty and was rejected.
	return pid
}
