// Package systemd talks to the host's systemd: whether it runs at all, and
// systemd-machined's RegisterMachine/UnregisterMachine on the system bus.
// It knows nothing of the daemon; callers pass plain names, ids and pids.
package systemd
