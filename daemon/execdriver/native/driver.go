// Package native runs containers with libcontainer, each owned by a small
// shim process (daemon/execdriver/shim: the daemon binary, or docker-shim,
// re-executed with shimproto.ShimCommand) so that containers outlive the
// daemon and a restarted daemon can reconnect. A shim hosts a group of
// containers (at most the group size, group.go). This package is the
// daemon's side, its execdriver.Driver: it spawns the shims, hands them
// containers, talks to them over the containers' control sockets
// (daemon/execdriver/shimproto), restores them after a daemon restart, and
// cleans up after a shim that died.
//
// State of a container lives in execRoot/containers/<id>/: the bundle's
// config.json, the shim's options, the record of the shim serving it
// (shim.pid), the container's shim.log and control socket, and the exit
// status once the container exited. A shim's own directory is
// execRoot/shims/<random>/ (its pid, log and group socket).
// libcontainer's own state is in execRoot/runc.
package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Driver creates and finds containers.
type Driver struct {
	execRoot, shimBinary, runcRoot string
	// systemdCgroup: containers' cgroups are systemd units (the systemd
	// cgroup driver), decided once by the daemon.
	systemdCgroup bool

	mu sync.Mutex
	// hostedBy: the shim of ours each container was handed to.
	hostedBy map[string]*shimGroup

	// groupMu guards the shims we started and the group size.
	groupMu   sync.Mutex
	groups    []*shimGroup
	groupSize int
}

var _ execdriver.Driver = (*Driver)(nil)

// New prepares execRoot and returns a driver that spawns shimBinary.
// systemdCgroup selects the systemd cgroup driver: each container's limits
// go on a slice and its processes in a scope (see
// daemon/execdriver/shim/cgroups.go).
func New(execRoot, shimBinary string, systemdCgroup bool) (*Driver, error) {
	if !seccomp.Enabled {
		// Containers would otherwise fail at start, one by one, or worse run
		// without the default profile: refuse to begin at all.
		return nil, errors.New("this binary was built without seccomp support: build it with `-tags seccomp` (as `make` does)")
	}
	d := &Driver{
		execRoot:      execRoot,
		shimBinary:    shimBinary,
		systemdCgroup: systemdCgroup,
		runcRoot:      filepath.Join(execRoot, "runc"),
		hostedBy:      map[string]*shimGroup{},
		groupSize:     DefaultShimGroupSize,
	}
	for _, dir := range []string{d.containersDir(), d.runcRoot, d.groupsDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("exec driver: %w", err)
		}
	}
	d.tidyGroups()
	return d, nil
}

func (d *Driver) containersDir() string     { return filepath.Join(d.execRoot, "containers") }
func (d *Driver) stateDir(id string) string { return filepath.Join(d.containersDir(), id) }

// validID is what libcontainer accepts, minus leading dots.
var validID = regexp.MustCompile(`^[A-Za-z0-9_+\-][A-Za-z0-9_+\-.]*$`)

// createTimeout bounds how long we wait for the shim to report; a healthy
// create takes well under a second.
const createTimeout = 60 * time.Second

// Create hands the container to a shim (one of ours with room, or a new
// one), which creates it: when it returns, namespaces, mounts and
// prestart hooks are done and the user's process waits for Start. On
// failure nothing is left behind.
func (d *Driver) Create(ctx context.Context, o execdriver.CreateOptions) (_ execdriver.Task, retErr error) {
	if !validID.MatchString(o.ID) {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid container id %q", o.ID))
	}
	if o.Spec == nil || o.Spec.Process == nil || o.Spec.Root == nil {
		return nil, errdefs.InvalidParameter(errors.New("incomplete OCI spec"))
	}
	dir := d.stateDir(o.ID)
	if _, err := os.Stat(dir); err == nil {
		if shimproto.LiveShimPid(dir) != 0 {
			return nil, errdefs.Conflict(fmt.Errorf("container %s is already running", o.ID))
		}
		// Leftovers of a previous run nobody deleted.
		if err := d.Delete(o.ID); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	defer func() {
		if retErr != nil {
			if err := d.Delete(o.ID); err != nil {
				slog.Error("cleaning up after failed create", "id", o.ID, "err", err)
			}
		}
	}()
	if err := shimproto.WriteJSONQuick(filepath.Join(dir, shimproto.SpecFile), o.Spec); err != nil {
		return nil, err
	}
	so := shimproto.Options{
		ID: o.ID, Tty: o.Tty, OpenStdin: o.OpenStdin, StdinOnce: o.StdinOnce,
		ConsoleHeight: o.ConsoleHeight, ConsoleWidth: o.ConsoleWidth,
		Log: o.Log, ConsolePTY: o.Spec.Annotations[oci.ConsoleAnnotation] == oci.ConsolePTY,
		SystemdCgroup: d.systemdCgroup,
	}
	if err := shimproto.WriteJSONQuick(filepath.Join(dir, shimproto.OptionsFile), so); err != nil {
		return nil, err
	}
	resp, err := d.host(ctx, o.ID, dir, o.ExtraFiles)
	if err != nil {
		return nil, err
	}
	return &Task{d: d, id: o.ID, dir: dir, pid: resp.Pid, tty: o.Tty}, nil
}

func shimLogTail(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, shimproto.ShimLogFile))
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 512 {
		b = b[len(b)-512:]
	}
	return " (shim log: " + string(b) + ")"
}

// Restore reconnects to the shim of a container created by an earlier
// daemon. If the container exited meanwhile the error wraps *ExitedError
// with the recorded status; if there is no trace of it, it is NotFound.
func (d *Driver) Restore(ctx context.Context, id string) (execdriver.Task, error) {
	if !validID.MatchString(id) {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid container id %q", id))
	}
	dir := d.stateDir(id)
	if _, err := os.Stat(dir); err != nil {
		return nil, errdefs.NotFound(fmt.Errorf("no such container in the runtime: %s", id))
	}
	resp, err := d.shimState(ctx, dir)
	if err == nil {
		if resp.Exit != nil {
			return nil, fmt.Errorf("restoring %s: %w", id, &execdriver.ExitedError{Status: *resp.Exit})
		}
		if !resp.Started {
			return nil, fmt.Errorf("restoring %s: %w", id, &execdriver.NotStartedError{Pid: resp.Pid})
		}
		return &Task{d: d, id: id, dir: dir, pid: resp.Pid, tty: resp.Tty}, nil
	}
	if st, rerr := shimproto.ReadExit(dir); rerr == nil && st != nil {
		return nil, fmt.Errorf("restoring %s: %w", id, &execdriver.ExitedError{Status: *st})
	}
	if shimproto.LiveShimPid(dir) != 0 {
		return nil, errdefs.Unavailable(fmt.Errorf("shim of %s is not answering: %w", id, err))
	}
	// The shim died without recording an exit (killed, or the machine
	// rebooted): nothing can hold the container's stdio any more, so the
	// container is stopped and reported as exited abnormally.
	slog.Warn("shim gone without exit status; killing the container", "id", id, "err", err)
	d.killContainer(id)
	st := execdriver.ExitStatus{Code: 255, ExitedAt: time.Now().UTC()}
	if werr := shimproto.WriteExit(dir, st); werr != nil {
		slog.Warn("recording exit status", "id", id, "err", werr)
	}
	return nil, fmt.Errorf("restoring %s: %w", id, &execdriver.ExitedError{Status: st})
}

// restoreWait bounds how long Restore waits for a live shim that does not
// answer yet: one the dead daemon had just spawned is still creating its
// container and opens its socket when done.
const restoreWait = 5 * time.Second

// shimState asks the shim serving dir for its state, waiting up to
// restoreWait for a live shim that is not listening yet.
func (d *Driver) shimState(ctx context.Context, dir string) (shimproto.Response, error) {
	deadline := time.Now().Add(restoreWait)
	for {
		conn, _, resp, err := shimproto.Call(dir, shimproto.Request{Op: shimproto.OpState})
		if err == nil {
			conn.Close()
			return resp, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil || shimproto.LiveShimPid(dir) == 0 {
			return resp, err
		}
		if st, _ := shimproto.ReadExit(dir); st != nil {
			return resp, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// List returns the id of every container with a state directory or
// libcontainer state, live or not.
func (d *Driver) List() ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	for _, dir := range []string{d.containersDir(), d.runcRoot} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("exec driver: %w", err)
		}
		for _, e := range ents {
			if id := e.Name(); e.IsDir() && validID.MatchString(id) && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// Delete makes sure the container is gone: its shim (given a moment to
// finish on its own), its processes, cgroups and runtime state, and its
// state directory. Deleting an unknown container is not an error.
func (d *Driver) Delete(id string) error {
	if !validID.MatchString(id) {
		return errdefs.InvalidParameter(fmt.Errorf("invalid container id %q", id))
	}
	dir := d.stateDir(id)
	d.stopShim(id, dir)
	d.unhost(id)
	d.killContainer(id)
	d.removeLimits(id, dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing state of %s: %w", id, err)
	}
	return nil
}

// stopShim has a live shim kill its container and waits briefly for the
// shim to be done with it. A shim that stays stuck on it is killed only
// if the container is its only one: the others of its group must not pay
// for it; the container itself is killed by killContainer either way.
func (d *Driver) stopShim(id, dir string) {
	if shimproto.LiveShimPid(dir) != 0 {
		// A shim whose container still runs (or was never let run: a
		// start cut short by a crash) reaps the container's init once it
		// is killed, records the exit and exits by itself, leaving no
		// orphan for anyone else to reap. One that does not answer is
		// killed below.
		killViaShim(dir)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		pid := shimproto.LiveShimPid(dir)
		if pid == 0 {
			break
		}
		if time.Now().After(deadline) {
			if !soleContainer(dir) {
				slog.Warn("shim is not done with the container; leaving the shim to its other containers", "id", id, "pid", pid)
				return
			}
			slog.Warn("killing shim", "id", id, "pid", pid)
			_ = unix.Kill(pid, unix.SIGKILL)
			deadline = time.Now().Add(2 * time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// soleContainer says whether the shim serving dir serves no other
// container: no other state directory names the same shim.
func soleContainer(dir string) bool {
	pid := shimproto.LiveShimPid(dir)
	ents, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		return false
	}
	for _, e := range ents {
		other := filepath.Join(filepath.Dir(dir), e.Name())
		if other != dir && shimproto.LiveShimPid(other) == pid {
			return false
		}
	}
	return true
}

// killViaShim asks the shim serving dir to SIGKILL its container, giving
// it a moment to answer.
func killViaShim(dir string) {
	conn, err := shimproto.Dial(dir)
	if err != nil {
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if err := shimproto.WriteJSONLine(conn, shimproto.Request{Op: shimproto.OpSignal, Signal: int(unix.SIGKILL)}); err != nil {
		return
	}
	var resp shimproto.Response
	_ = shimproto.ReadJSONLine(bufio.NewReader(conn), &resp)
}

// removeLimits removes the container's limits cgroup, which its shim
// removes itself unless it died first.
func (d *Driver) removeLimits(id, dir string) {
	var spec specs.Spec
	if err := shimproto.ReadJSONFile(filepath.Join(dir, shimproto.SpecFile), &spec); err != nil {
		return
	}
	if err := shimproto.DestroyLimits(&spec, d.systemdCgroup); err != nil {
		slog.Warn("removing the limits cgroup", "id", id, "err", err)
	}
}

// killContainer destroys the libcontainer container, killing whatever
// still runs in it. Used when the shim could not do it itself.
func (d *Driver) killContainer(id string) {
	c, err := libcontainer.Load(d.runcRoot, id)
	if err != nil {
		if !errors.Is(err, libcontainer.ErrNotExist) {
			slog.Warn("loading container state", "id", id, "err", err)
			_ = os.RemoveAll(filepath.Join(d.runcRoot, id))
		}
		return
	}
	for i := 0; i < 100; i++ {
		st, err := c.Status()
		if err != nil || st == libcontainer.Stopped {
			break
		}
		if i%25 == 0 {
			_ = c.Signal(unix.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Destroy(); err != nil {
		slog.Warn("destroying container", "id", id, "err", err)
	}
}
