package shimproto

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
	SpecFile    = "config.json" // the OCI bundle's spec (the shim's cwd is the bundle)
	OptionsFile = "shim.json"   // Options
	ExitFile    = "exit.json"   // execdriver.ExitStatus, written once the container exited
	ShimPidFile = "shim.pid"
	ShimLogFile = "shim.log"
)

// Options is what the daemon tells the shim besides the spec.
type Options struct {
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

// ReserveExit makes room for the exit status ahead of time, when the shim
// starts: recording it then needs no free space, so that a container that
// exits while the exec root is full still leaves its status.
func ReserveExit(dir string) error {
	return atomicfile.Reserve(filepath.Join(dir, ExitFile), 0, 0o600)
}

// WriteExit records the exit status durably (it must survive a crash of
// everything but the disk) in the room ReserveExit made. The file is
// JSON padded with white space (see atomicfile.WriteReserved).
func WriteExit(dir string, st execdriver.ExitStatus) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.WriteReserved(filepath.Join(dir, ExitFile), b, 0o600)
}

// WriteFileQuick replaces path atomically (readers never see a partial
// file) but without fsync: for state that is worthless after a reboot
// anyway, and creating a container should not wait for the disk.
func WriteFileQuick(path string, b []byte) error {
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

// WriteJSONQuick is WriteFileQuick of v's JSON.
func WriteJSONQuick(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteFileQuick(path, b)
}

// ReadJSONFile reads path's JSON into v.
func ReadJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	return nil
}

// ReadExit returns the recorded exit status, or nil if there is none.
func ReadExit(dir string) (*execdriver.ExitStatus, error) {
	var st execdriver.ExitStatus
	if err := ReadJSONFile(filepath.Join(dir, ExitFile), &st); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return &st, nil
}

// WriteShimPid records in dir that the shim of groupDir (this process)
// serves the container: its pid and its group directory, which
// LiveShimPid checks against the process's command line.
func WriteShimPid(dir, groupDir string) error {
	return WriteFileQuick(filepath.Join(dir, ShimPidFile), []byte(strconv.Itoa(os.Getpid())+"\n"+groupDir+"\n"))
}

// ReleaseShimPid says that no shim serves dir any more: the shim removes
// the record once it is done with the container (exit recorded, socket
// closed), while it goes on serving the other containers of its group.
func ReleaseShimPid(dir string) error {
	if err := os.Remove(filepath.Join(dir, ShimPidFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// LiveShimPid returns the pid of the shim serving dir if it is still
// running and has not released the container, checked against its
// command line (the group directory it serves) so that a recycled pid is
// not mistaken for it; 0 otherwise. A record holding only a pid is an
// earlier daemon's one-container shim, whose command line names dir.
func LiveShimPid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, ShimPidFile))
	if err != nil {
		return 0
	}
	fields := strings.Split(strings.TrimSpace(string(b)), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(fields[0]))
	if err != nil || pid <= 0 {
		return 0
	}
	want := dir
	if len(fields) > 1 {
		want = fields[1]
	}
	return liveShim(pid, want)
}

// LiveGroupPid returns the pid of the shim whose group directory is
// groupDir (its shim.pid), if it still runs; 0 otherwise.
func LiveGroupPid(groupDir string) int {
	b, err := os.ReadFile(filepath.Join(groupDir, ShimPidFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return 0
	}
	return liveShim(pid, groupDir)
}

// liveShim checks that pid is a shim started for dir.
func liveShim(pid int, dir string) int {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return 0
	}
	args := strings.Split(string(cmdline), "\x00")
	if len(args) < 3 || args[1] != ShimCommand || args[2] != dir {
		return 0
	}
	// A zombie has its cmdline cleared; a dead-but-unreaped shim
	// (our own child not yet waited for) reads as empty and was rejected.
	return pid
}
