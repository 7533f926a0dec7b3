package systemd

import (
	"context"
	"fmt"

	"github.com/godbus/dbus/v5"

	"github.com/sdengine/engine/pkg/errdefs"
)

const (
	systemdDest         = "org.freedesktop.systemd1"
	systemdPath         = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdManager      = "org.freedesktop.systemd1.Manager"
	systemdUnitIface    = "org.freedesktop.systemd1.Unit"
	errNoSuchUnit       = "org.freedesktop.systemd1.NoSuchUnit"
	dbusPropertiesIface = "org.freedesktop.DBus.Properties"
)

// UnitActiveState is the ActiveState of a unit of the system's systemd
// ("active", "activating", "reloading", "deactivating", "inactive",
// "failed"); a unit systemd has not loaded is "inactive", as systemctl
// shows it. One private system-bus connection per call: it is asked once
// per start of a container bound to a unit, not more.
func UnitActiveState(ctx context.Context, unit string) (string, error) {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		return "", errdefs.Unavailable(fmt.Errorf("system bus: %w", err))
	}
	defer conn.Close()
	var path dbus.ObjectPath
	err = conn.Object(systemdDest, systemdPath).CallWithContext(ctx, systemdManager+".GetUnit", 0, unit).Store(&path)
	if isDBusError(err, errNoSuchUnit) {
		return "inactive", nil
	}
	if err != nil {
		return "", fmt.Errorf("systemd: unit %s: %w", unit, classify(err))
	}
	var v dbus.Variant
	err = conn.Object(systemdDest, path).CallWithContext(ctx, dbusPropertiesIface+".Get", 0, systemdUnitIface, "ActiveState").Store(&v)
	if err != nil {
		return "", fmt.Errorf("systemd: unit %s: ActiveState: %w", unit, classify(err))
	}
	s, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("systemd: unit %s: ActiveState is %s, not a string", unit, v.Signature())
	}
	return s, nil
}
