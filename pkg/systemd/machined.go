package systemd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/sdengine/engine/pkg/errdefs"
)

const (
	machinedDest  = "org.freedesktop.machine1"
	machinedPath  = dbus.ObjectPath("/org/freedesktop/machine1")
	managerIface  = "org.freedesktop.machine1.Manager"
	errUnknownMth = "org.freedesktop.DBus.Error.UnknownMethod"
	errExists     = "org.freedesktop.machine1.MachineExists"
	errNoMachine  = "org.freedesktop.machine1.NoSuchMachine"
)

// Machined is a client of systemd-machined over one system-bus connection,
// made on first use and made again when it was lost (dbus-daemon or the
// host restarted). Safe for concurrent use.
type Machined struct {
	// dial opens a private connection; a field so that tests can reach a
	// bus elsewhere. Private, not dbus.SystemBus's shared one, so that we
	// can close it and dial again.
	dial func() (*dbus.Conn, error)
	// unregisterMethod is "UnregisterMachine"; tests change it to see the
	// fallback for machined versions without it.
	unregisterMethod string

	mu   sync.Mutex
	conn *dbus.Conn
}

// NewMachined returns a client of the system bus's machined. It does not
// connect yet.
func NewMachined() *Machined {
	return &Machined{
		dial:             func() (*dbus.Conn, error) { return dbus.ConnectSystemBus() },
		unregisterMethod: "UnregisterMachine",
	}
}

// RegisterMachine tells machined about a machine whose leader process is
// leader. A zero id is sent as an empty array, which machined takes as
// "no id". machined refuses a leader that is not in a systemd unit's
// cgroup (*.scope or *.service). A name already registered is a Conflict.
func (m *Machined) RegisterMachine(ctx context.Context, name string, id [16]byte, service, class string, leader int, root string) error {
	if leader <= 0 {
		return errdefs.InvalidParameter(fmt.Errorf("register machine %s: invalid leader pid %d", name, leader))
	}
	idBytes := []byte{}
	if id != ([16]byte{}) {
		idBytes = id[:]
	}
	err := m.call(ctx, "RegisterMachine", name, idBytes, service, class, uint32(leader), root)
	if err != nil {
		return fmt.Errorf("register machine %s: %w", name, err)
	}
	return nil
}

// RegisterMachineWithNetwork is RegisterMachine for a machine with network
// interfaces of its own: ifindices are the host's ends of them (the
// container's veths), which machinectl status shows beside the machine's
// addresses. Without interfaces it is RegisterMachine.
func (m *Machined) RegisterMachineWithNetwork(ctx context.Context, name string, id [16]byte, service, class string, leader int, root string, ifindices []int32) error {
	if len(ifindices) == 0 {
		return m.RegisterMachine(ctx, name, id, service, class, leader, root)
	}
	if leader <= 0 {
		return errdefs.InvalidParameter(fmt.Errorf("register machine %s: invalid leader pid %d", name, leader))
	}
	idBytes := []byte{}
	if id != ([16]byte{}) {
		idBytes = id[:]
	}
	err := m.call(ctx, "RegisterMachineWithNetwork", name, idBytes, service, class, uint32(leader), root, ifindices)
	if err != nil {
		return fmt.Errorf("register machine %s: %w", name, err)
	}
	return nil
}

// UnregisterMachine removes a machine from machined's list without touching
// its processes. machined versions without UnregisterMachine (before
// systemd 227) get TerminateMachine instead, which also stops the
// machine's unit: by then the container is gone anyway. An unknown
// machine is NotFound.
func (m *Machined) UnregisterMachine(ctx context.Context, name string) error {
	err := m.call(ctx, m.unregisterMethod, name)
	if isDBusError(err, errUnknownMth) {
		err = m.call(ctx, "TerminateMachine", name)
	}
	if err != nil {
		return fmt.Errorf("unregister machine %s: %w", name, err)
	}
	return nil
}

// Close drops the connection; the next call dials again.
func (m *Machined) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == nil {
		return nil
	}
	err := m.conn.Close()
	m.conn = nil
	return err
}

// call invokes a Manager method. A call that fails because the connection
// is closed is tried once more on a fresh connection: the bus may have
// restarted since the last call.
func (m *Machined) call(ctx context.Context, method string, args ...any) error {
	for attempt := 0; ; attempt++ {
		conn, err := m.connection()
		if err != nil {
			return errdefs.Unavailable(fmt.Errorf("system bus: %w", err))
		}
		call := conn.Object(machinedDest, machinedPath).CallWithContext(ctx, managerIface+"."+method, 0, args...)
		err = call.Err
		if err == nil {
			return nil
		}
		if (errors.Is(err, dbus.ErrClosed) || !conn.Connected()) && attempt == 0 && ctx.Err() == nil {
			m.drop(conn)
			continue
		}
		return classify(err)
	}
}

// connection returns the live connection, dialling when there is none or
// the one we had was closed by the other end.
func (m *Machined) connection() (*dbus.Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn != nil && m.conn.Connected() {
		return m.conn, nil
	}
	if m.conn != nil {
		_ = m.conn.Close()
		m.conn = nil
	}
	conn, err := m.dial()
	if err != nil {
		return nil, err
	}
	m.conn = conn
	return conn, nil
}

// drop forgets conn if it is still the current connection.
func (m *Machined) drop(conn *dbus.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == conn {
		_ = conn.Close()
		m.conn = nil
	}
}

func isDBusError(err error, name string) bool {
	var de dbus.Error
	if errors.As(err, &de) {
		return de.Name == name
	}
	var dp *dbus.Error
	return errors.As(err, &dp) && dp.Name == name
}

// classify maps machined's errors onto our classes.
func classify(err error) error {
	switch {
	case isDBusError(err, errExists):
		return errdefs.Conflict(err)
	case isDBusError(err, errNoMachine):
		return errdefs.NotFound(err)
	case isDBusError(err, errUnknownMth):
		return errdefs.NotImplemented(err)
	case isDBusError(err, "org.freedesktop.DBus.Error.InvalidArgs"):
		return errdefs.InvalidParameter(err)
	case isDBusError(err, "org.freedesktop.DBus.Error.ServiceUnknown"),
		isDBusError(err, "org.freedesktop.DBus.Error.NameHasNoOwner"):
		return errdefs.Unavailable(err)
	}
	return err
}
