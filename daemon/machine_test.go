package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/systemd"
)

func TestCgroupDriver(t *testing.T) {
	def := cgroupDriverCgroupfs
	if systemd.Booted() {
		def = cgroupDriverSystemd
	}
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{nil, def},
		{[]string{"native.cgroupdriver=systemd"}, "systemd"},
		{[]string{"native.cgroupdriver=cgroupfs"}, "cgroupfs"},
		{[]string{"Native.CgroupDriver = cgroupfs"}, "cgroupfs"},
		{[]string{"native.cgroupdriver=systemd", "native.cgroupdriver=cgroupfs"}, "cgroupfs"},
		{[]string{"isolation=default"}, def},
	} {
		got, err := cgroupDriver(tc.opts)
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.opts, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"native.cgroupdriver=lxc"}, {"native.cgroupdriver"}, {"native.cgroupdriver="}} {
		if _, err := cgroupDriver(bad); !errdefs.IsInvalidParameter(err) {
			t.Errorf("%q: %v, want invalid parameter", bad, err)
		}
	}
}

// fakeMachined records the calls the daemon makes, in order; a name it
// never registered answers not found, as machined does.
type fakeMachined struct {
	mu    sync.Mutex
	calls []string
	known map[string]bool
}

func (f *fakeMachined) RegisterMachineWithNetwork(_ context.Context, name string, _ [16]byte, service, class string, leader int, root string, _ []int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("register %s %s/%s leader=%d root=%s", name, service, class, leader, root))
	f.known[name] = true
	return nil
}

func (f *fakeMachined) UnregisterMachine(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "unregister "+name)
	if !f.known[name] {
		return errdefs.NotFound(fmt.Errorf("no machine %q", name))
	}
	delete(f.known, name)
	return nil
}

// The daemon's side of machined, without a bus: a registration and its
// unregistration run in order even when queued back to back; a container
// renamed while running is unregistered under the name it was registered
// with; one this daemon never registered (it started under an earlier
// daemon) under the name it would have had.
func TestMachineRegistrationOrderAndNames(t *testing.T) {
	fake := &fakeMachined{known: map[string]bool{}}
	d := &Daemon{machines: newMachineRegistry()}
	WithMachined(fake)(d)

	c := container.New(t.TempDir(), strings.Repeat("ab", 32), "/web")
	c.Config = &containertypes.Config{}
	c.BaseFS = "/var/lib/x/rootfs"
	c.Lock()
	d.registerMachine(c, 4242)
	c.Name = "/renamed"
	c.Unlock()
	d.unregisterMachine(c)

	other := container.New(t.TempDir(), strings.Repeat("cd", 32), "/adopted")
	other.Config = &containertypes.Config{}
	d.unregisterMachine(other)
	d.machines.wait()

	want := []string{
		"register " + systemd.MachineName("/web", c.ID) + " docker/container leader=4242 root=/var/lib/x/rootfs",
		"unregister " + systemd.MachineName("/web", c.ID),
		"unregister " + systemd.MachineName("/adopted", other.ID),
	}
	fake.mu.Lock()
	got := append([]string(nil), fake.calls...)
	fake.mu.Unlock()
	// The two containers' queues are independent: compare c's calls in
	// order and other's by presence.
	var cCalls []string
	sawOther := false
	for _, g := range got {
		if g == want[2] {
			sawOther = true
		} else {
			cCalls = append(cCalls, g)
		}
	}
	if len(got) != 3 || !sawOther {
		t.Fatalf("calls %q, want %q", got, want)
	}
	if len(cCalls) != 2 || cCalls[0] != want[0] || cCalls[1] != want[1] {
		t.Errorf("the renamed container's calls %q, want %q", cCalls, want[:2])
	}
	if len(fake.known) != 0 {
		t.Errorf("machines left registered: %v", fake.known)
	}
}

// Without a machined (a host not running systemd) nothing is queued.
func TestNoMachinedNoRegistration(t *testing.T) {
	d := &Daemon{machines: newMachineRegistry()}
	c := container.New(t.TempDir(), strings.Repeat("ef", 32), "/x")
	c.Config = &containertypes.Config{}
	c.Lock()
	d.registerMachine(c, 1)
	c.Unlock()
	d.unregisterMachine(c)
	d.machines.mu.Lock()
	defer d.machines.mu.Unlock()
	if len(d.machines.tail) != 0 || len(d.machines.names) != 0 {
		t.Errorf("queued without a machined: %v %v", d.machines.tail, d.machines.names)
	}
}
