// Package podinfra runs a pod's infra process: the PID 1 of a PID
// namespace the pod's containers share (shareProcessNamespace). It is the
// only process a pod has of its own: the network, IPC and UTS namespaces
// are pinned as files (cri/podns), but a PID namespace dies with its first
// process, so one must live as long as the pod.
//
// The process is the engine's shim binary run with Command: it reaps the
// orphans the pod's containers leave (they are re-parented to it) and
// waits for SIGTERM. It is started in a session of its own, so that it
// outlives a restart of the daemon as the containers do.
package podinfra

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Command is the shim's argument that runs Main.
const Command = "pod-infra"

// Process is a running infra process. StartTime (clock ticks after boot,
// from /proc/PID/stat) tells it from a later process given the same PID.
type Process struct {
	PID       int
	StartTime uint64
}

// Start runs binary Command in a new PID namespace.
func Start(binary string) (*Process, error) {
	cmd := exec.Command(binary, Command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID, Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pod infra process: %w", err)
	}
	// Reap it when it ends while this daemon runs; after a restart of the
	// daemon init does.
	go func() { _ = cmd.Wait() }()
	st, err := startTime(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("pod infra process: %w", err)
	}
	return &Process{PID: cmd.Process.Pid, StartTime: st}, nil
}

// NSPath is the PID namespace the pod's containers join.
func (p *Process) NSPath() string { return fmt.Sprintf("/proc/%d/ns/pid", p.PID) }

// Alive says whether the process still runs (and is the one started).
func (p *Process) Alive() bool {
	st, err := startTime(p.PID)
	// A zombie is dead: it waits only for its parent (the daemon, whose
	// reaper may lag on a loaded host) to reap it.
	return err == nil && st == p.StartTime && !isZombie(p.PID)
}

// Stop kills the process, and with it every process of the namespace, and
// waits (up to 10 s) until it is gone. A process already gone is no error.
func (p *Process) Stop() error {
	if !p.Alive() {
		return nil
	}
	if err := unix.Kill(p.PID, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("stop pod infra process %d: %w", p.PID, err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err := startTime(p.PID); err != nil || st != p.StartTime || isZombie(p.PID) {
			return nil
		}
	}
	return fmt.Errorf("pod infra process %d did not end", p.PID)
}

// statFields are the fields of /proc/PID/stat after the command name
// (which may hold spaces and parentheses: it ends at the last ')').
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

func startTime(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// Field 22 of stat is the start time; f starts at field 3.
	if len(f) < 20 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func isZombie(pid int) bool {
	f, err := statFields(pid)
	return err == nil && len(f) > 0 && f[0] == "Z"
}

// Main is the infra process: it reaps every child re-parented to it and
// ends at SIGTERM or SIGINT. It never returns.
func Main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGCHLD)
	for sig := range sigs {
		if sig != unix.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
