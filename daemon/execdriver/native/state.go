package native

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/pkg/atomicfile"
)

// Files in a container's state directory.
const (
	specFile    = "config.json" // the OCI bundle's spec (the shim's cwd is the bundle)
	optionsFile = "shim.json"   // shimOptions
	exitFile    = "exit.json"   // execdriver.ExitStatus, written once the container exited
	shimPidFile = "shim.pid"
	shimLogFile = "shim.log"
)

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
func readExit(dir string) (*execdriver.ExitStatus, error) {
	var st execdriver.ExitStatus
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
