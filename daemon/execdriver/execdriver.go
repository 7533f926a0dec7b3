// Package execdriver is what the daemon knows of the component that runs
// containers: the Driver it holds, the Task handle of a created container,
// the Process handle of an exec, and the values they exchange. The daemon
// never sees how a container is run; the one implementation,
// daemon/execdriver/native (libcontainer under shims that each host a group of containers), is
// constructed by daemon.New and nowhere else in the daemon. Tests give
// New daemon/execdriver/fakedriver instead (daemon.WithExecDriver).
//
// The interfaces hold exactly what the daemon calls, no more: every method
// here is one each implementation (and each test double) must provide, so
// one the daemon does not use would be a cost with no caller. What a
// driver offers beyond them (its own tests' needs, say) stays on its
// concrete types.
package execdriver

import (
	"context"
	"syscall"

	"github.com/opencontainers/cgroups"
)

// Driver creates containers and finds again those an earlier daemon
// created: containers outlive the daemon, so the daemon's start-up asks for
// each one it recorded as running.
type Driver interface {
	// Create makes the container o describes, up to (not including)
	// running its process: namespaces, mounts and prestart hooks are done
	// when it returns, and the process waits for Task.Start, so that the
	// daemon can connect the clients already attached first. On failure
	// nothing is left behind.
	Create(ctx context.Context, o CreateOptions) (Task, error)
	// Restore reconnects to container id, created by an earlier daemon. If
	// it exited meanwhile the error wraps *ExitedError with the recorded
	// status, which the daemon records as if it had seen the exit; if its
	// process was created but never started, the error wraps
	// *NotStartedError; if there is no trace of it, the error is NotFound.
	Restore(ctx context.Context, id string) (Task, error)
	// List returns the id of every container the driver holds anything
	// for (a live shim, a dead one's state, runtime state): at start the
	// daemon reconciles them with its records, so that nothing is kept
	// for a container it has no record of.
	List() ([]string, error)
	// Delete makes sure container id is gone, with all the driver kept for
	// it: the daemon calls it after an exit, a failed start and a removal.
	// Deleting an unknown container is not an error.
	Delete(id string) error
	// BundleConfig is the path of container id's OCI config.json as Create
	// writes it: the daemon hands it to the hooks as their CONFIG_PATH.
	BundleConfig(id string) string
}

// Task is the daemon's handle on a created container. It holds no state the
// driver cannot find again, so Restore can make a new one.
type Task interface {
	// Pid is the host pid of the container's init process: the daemon
	// reports it and registers the container with systemd-machined.
	Pid() int
	// Start lets the container's process run (docker start).
	Start() error
	// Signal sends sig to the container's init process (stop, kill).
	Signal(sig syscall.Signal) error
	// Resize changes the container's tty size (a no-op without a tty).
	Resize(height, width uint16) error
	// Wait blocks until the container exited and returns how: the daemon's
	// monitor of each running container.
	Wait(ctx context.Context) (ExitStatus, error)
	// Attach connects s to the container's stdio and returns when the
	// container's output ended or ctx is done (docker attach to a running
	// container).
	Attach(ctx context.Context, s Streams) error
	// AttachReady subscribes s and returns once the subscription is in
	// place; the returned function streams until the output ends or ctx is
	// done. The daemon uses it to connect the clients that attached before
	// the start, then calls Start: they cannot miss any output.
	AttachReady(ctx context.Context, s Streams) (func() error, error)
	// Exec starts a process in the running container; its stdio flows
	// between the process and o.Streams until it exits (docker exec).
	Exec(ctx context.Context, o ExecOptions) (Process, error)
	// Pause freezes every process of the container; Resume thaws them.
	Pause() error
	Resume() error
	// Update changes the container's limits (docker update).
	Update(u Update) error
	// Stats reads the container's cgroup statistics (docker stats).
	Stats() (*cgroups.Stats, error)
	// ReopenLog makes the container's log driver write to a new file at
	// its path (CRI's ReopenContainerLog, after the kubelet renamed the
	// file away); NotImplemented for a driver that cannot.
	ReopenLog() error
}

// Update is a docker update's limits: each non-nil field replaces the
// current value.
type Update struct {
	Memory, MemorySwap, MemoryReservation *int64
	CPUShares                             *uint64
	CPUQuota                              *int64
	CPUPeriod                             *uint64
	CpusetCpus, CpusetMems                *string
	PidsLimit                             *int64
	BlkioWeight                           *uint16
}

// Process is the daemon's handle on a process started by Task.Exec.
type Process interface {
	// Pid is the exec'd process's host pid (docker exec inspect).
	Pid() int
	// Resize changes the exec's tty size (a no-op without a tty).
	Resize(height, width uint16) error
	// Wait returns the process's exit code (128+signal if killed).
	Wait(ctx context.Context) (int, error)
	// Signal sends sig to the process (a health probe over its timeout).
	Signal(sig syscall.Signal) error
}
