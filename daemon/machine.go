package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/systemd"
)

// Registration with systemd-machined (docs/systemd.md, "machinectl"). The D-Bus calls run off
// the start and exit paths, in one goroutine chain per container so that
// an unregistration never overtakes the registration it undoes.

// Machined is what the daemon asks of systemd-machined: pkg/systemd's
// client of the system bus by default, on hosts that run systemd (one per
// daemon, connected at the first call; none elsewhere, and no
// registration); tests give their own (WithMachined).
type Machined interface {
	RegisterMachineWithNetwork(ctx context.Context, name string, id [16]byte, service, class string, leader int, root string, ifindices []int32) error
	UnregisterMachine(ctx context.Context, name string) error
}

// machineCallTimeout bounds one call to machined; a hung bus must not pile
// up goroutines forever.
const machineCallTimeout = 10 * time.Second

// machineRegistry is the daemon's state of its machined registrations.
type machineRegistry struct {
	mu sync.Mutex
	// tail is the last queued operation per container ID, closed when done.
	tail map[string]chan struct{}
	// names are the machine names registered, by container ID: a renamed
	// container is unregistered under the name it was registered with.
	names map[string]string
}

func newMachineRegistry() *machineRegistry {
	return &machineRegistry{tail: map[string]chan struct{}{}, names: map[string]string{}}
}

// queue runs op after every earlier op for the same container.
func (r *machineRegistry) queue(id string, op func()) {
	r.mu.Lock()
	prev := r.tail[id]
	done := make(chan struct{})
	r.tail[id] = done
	r.mu.Unlock()
	go func() {
		if prev != nil {
			<-prev
		}
		op()
		close(done)
		r.mu.Lock()
		if r.tail[id] == done {
			delete(r.tail, id)
		}
		r.mu.Unlock()
	}()
}

// wait returns when every queued operation has run.
func (r *machineRegistry) wait() {
	r.mu.Lock()
	tails := make([]chan struct{}, 0, len(r.tail))
	for _, c := range r.tail {
		tails = append(tails, c)
	}
	r.mu.Unlock()
	for _, c := range tails {
		<-c
	}
}

// registered records (or, with name "", forgets) a registration and
// returns the name it replaced.
func (r *machineRegistry) setName(id, name string) (old string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok = r.names[id]
	if name == "" {
		delete(r.names, id)
	} else {
		r.names[id] = name
	}
	return old, ok
}

// registerMachine tells systemd-machined about a started container: name,
// machine id (= the container's /etc/machine-id), leader pid and rootfs.
// Only with a machined (hosts that run systemd); a failure is logged, never fatal: the
// container may already have exited. The caller holds c's lock.
func (d *Daemon) registerMachine(c *container.Container, pid int) {
	if d.machined == nil {
		return
	}
	name := systemd.MachineName(c.Name, c.ID)
	mid, err := machineID(c)
	if err != nil {
		slog.Warn("RegisterMachine skipped", "id", c.ID, "err", err)
		return
	}
	id := systemd.MachineID(mid)
	// Read here, under the caller's lock, not in the goroutine.
	root := c.BaseFS
	if root == "" {
		root = "/"
	}
	cid := c.ID
	ifs := hostInterfaces(c)
	d.machines.queue(cid, func() {
		ctx, cancel := context.WithTimeout(context.Background(), machineCallTimeout)
		defer cancel()
		err := d.machined.RegisterMachineWithNetwork(ctx, name, id, "docker", "container", pid, root, ifs)
		if err != nil {
			slog.Warn("RegisterMachine failed", "id", cid, "machine", name, "leader", pid, "err", err)
			return
		}
		d.machines.setName(cid, name)
		slog.Info("RegisterMachine", "id", cid, "machine", name, "leader", pid, "root", root, "ifindices", ifs)
	})
}

// hostInterfaces are the host's ends of c's veths (their ifindex), which
// machined shows as the machine's interfaces; none for the host and none
// network modes, and for container:X (the donor's are its own). The caller
// holds c's lock.
func hostInterfaces(c *container.Container) []int32 {
	var out []int32
	for _, ep := range containerEndpoints(c) {
		if ep.HostVeth == "" {
			continue
		}
		l, err := netlink.LinkByName(ep.HostVeth)
		if err != nil {
			slog.Warn("RegisterMachine: the container's veth is gone", "id", c.ID, "veth", ep.HostVeth, "err", err)
			continue
		}
		out = append(out, int32(l.Attrs().Index))
	}
	return out
}

// unregisterMachine tells systemd-machined the container stopped. A
// container this daemon did not register (it started under an earlier
// daemon) is unregistered under the name it would have had; machined not
// knowing it is fine. The caller must not hold c's lock.
func (d *Daemon) unregisterMachine(c *container.Container) {
	if d.machined == nil {
		return
	}
	c.Lock()
	fallback := systemd.MachineName(c.Name, c.ID)
	c.Unlock()
	cid := c.ID
	d.machines.queue(cid, func() {
		name, ok := d.machines.setName(cid, "")
		if !ok {
			name = fallback
		}
		ctx, cancel := context.WithTimeout(context.Background(), machineCallTimeout)
		defer cancel()
		err := d.machined.UnregisterMachine(ctx, name)
		switch {
		case err == nil:
			slog.Info("UnregisterMachine", "id", cid, "machine", name)
		case errdefs.IsNotFound(err):
			// machined already dropped it (its unit ended), or we never
			// registered it.
			slog.Debug("UnregisterMachine: no such machine", "id", cid, "machine", name)
		default:
			slog.Warn("UnregisterMachine failed", "id", cid, "machine", name, "err", err)
		}
	})
}

// Cgroup drivers, chosen with --exec-opt native.cgroupdriver=.
const (
	cgroupDriverSystemd  = "systemd"
	cgroupDriverCgroupfs = "cgroupfs"
)

// cgroupDriver is the cgroup driver exec-opts ask for; without one it is
// systemd on hosts that run systemd (containers become scopes under
// machine.slice, which machined needs), cgroupfs elsewhere. Other exec-opt
// keys are left to whoever reads them.
func cgroupDriver(execOpts []string) (string, error) {
	driver := ""
	for _, o := range execOpts {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return "", errdefs.InvalidParameter(fmt.Errorf("invalid exec-opt %q: want key=value", o))
		}
		if strings.ToLower(strings.TrimSpace(k)) != "native.cgroupdriver" {
			continue
		}
		switch v = strings.TrimSpace(v); v {
		case cgroupDriverSystemd, cgroupDriverCgroupfs:
			driver = v
		default:
			return "", errdefs.InvalidParameter(fmt.Errorf("native.cgroupdriver option %s not supported: use systemd or cgroupfs", v))
		}
	}
	if driver == "" {
		driver = cgroupDriverCgroupfs
		if systemd.Booted() {
			driver = cgroupDriverSystemd
		}
	}
	return driver, nil
}
