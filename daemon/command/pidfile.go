package command

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// procRoot is where /proc is (a variable for tests).
var procRoot = "/proc"

// daemonAlive reports whether pid, read from the pidfile, is a dockerd
// that still runs. A pid that is gone, a zombie (a killed daemon its
// parent has not reaped yet: it is in /proc for a moment after kill -9),
// or any other program (the pid reused) leaves the pidfile stale.
func daemonAlive(pid int) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	dir := filepath.Join(procRoot, fmt.Sprint(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return false
	}
	switch procState(stat) {
	case 'Z', 'X', 'x':
		return false
	}
	return isDockerd(dir)
}

// procState is the state field of /proc/PID/stat: the first after the
// command name, which is in parentheses and may itself hold ") ".
func procState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// isDockerd tells whether the process at dir (/proc/PID) is a daemon: its
// program is dockerd (or this binary, whatever its name) and it was run
// as the daemon, not as one of the binary's other roles (the shim, the
// container's init, the hooks runner), which take a first argument and
// the daemon never does. The program is /proc/PID/exe, or when that
// cannot be read (a process exiting has none) the command line's first
// word; with neither it is not a daemon.
func isDockerd(dir string) bool {
	cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	prog, err := os.Readlink(filepath.Join(dir, "exe"))
	if err != nil {
		prog = args[0]
	}
	if prog == "" {
		return false
	}
	name := filepath.Base(strings.TrimSuffix(prog, " (deleted)"))
	self, _ := os.Executable()
	if name != "dockerd" && name != filepath.Base(self) {
		return false
	}
	return len(args) < 2 || strings.HasPrefix(args[1], "-")
}
