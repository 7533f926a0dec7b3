package container

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/unitbind"
)

// unitEnv is what the CLI reads of its surroundings to tie a container to
// the systemd service that runs it; a value so that tests can give one.
type unitEnv struct {
	getenv     func(string) string
	procCgroup string // the text of /proc/self/cgroup
	// daemonHere: the daemon runs beside the CLI, under the same systemd
	// (sameSystemdAsDaemon).
	daemonHere bool
	pid        int
}

// hostUnitEnv reads the real ones. The daemon is asked nothing unless the
// CLI runs as a service's process.
func hostUnitEnv(daemonHost string) unitEnv {
	e := unitEnv{getenv: os.Getenv, pid: os.Getpid()}
	if os.Getenv("INVOCATION_ID") == "" {
		return e
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	e.procCgroup = string(cg)
	e.daemonHere = sameSystemdAsDaemon(daemonHost)
	return e
}

// sameSystemdAsDaemon tells whether the daemon at host sees the systemd
// units the CLI sees: it must be reached over a unix socket, its pid (the
// socket's peer credentials) must be visible in the CLI's pid namespace
// (a CLI in a container, talking to the host's daemon through a bound
// socket, sees 0), and, when the CLI may look (root), the daemon must be
// in the CLI's cgroup namespace (a CLI on the host talking to a daemon in
// a container would name the host's units to the container's systemd).
func sameSystemdAsDaemon(host string) bool {
	path, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return false
	}
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil || cred.Pid <= 0 {
		return false
	}
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/cgroup", cred.Pid))
	if err != nil {
		// Not ours to read (a CLI that is not root): the pid alone.
		return true
	}
	ours, err := os.Readlink("/proc/self/ns/cgroup")
	return err == nil && ours == theirs
}

// serviceToBind is the service a foreground `docker run` ties its
// container to (unitbind.BindToLabel), or "". The CLI must be a service's
// process: systemd gives those $INVOCATION_ID (a login shell has none),
// and its cgroup then names the service. A session scope, or a daemon
// under another systemd (sameSystemdAsDaemon: the CLI in a container, a
// daemon over the network) get no tie.
func serviceToBind(e unitEnv) string {
	if e.getenv("INVOCATION_ID") == "" || !e.daemonHere {
		return ""
	}
	return unitbind.ServiceFromCgroup(e.procCgroup)
}

// bindToService sets the label on a container run in the foreground by a
// service, unless the user set it (an empty value turns the tie off).
func bindToService(labels map[string]string, e unitEnv) map[string]string {
	if _, ok := labels[unitbind.BindToLabel]; ok {
		return labels
	}
	unit := serviceToBind(e)
	if unit == "" {
		return labels
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[unitbind.BindToLabel] = unit
	return labels
}

// unitWatchdog is the WATCHDOG_USEC= a container gets from the unit that
// runs the CLI (its WatchdogSec=), or "": systemd gives the main process
// WATCHDOG_USEC and WATCHDOG_PID (its pid), and sd_watchdog_enabled()
// takes the watchdog as meant for a process only when WATCHDOG_PID is
// unset or its own. WATCHDOG_PID is not passed: the CLI's pid means
// nothing in the container, and what runs there is then the one to ping
// (the CLI relays the pings).
func unitWatchdog(e unitEnv) string {
	v := e.getenv("WATCHDOG_USEC")
	usec, err := strconv.ParseUint(v, 10, 64)
	if err != nil || usec == 0 {
		return ""
	}
	if p := e.getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(e.pid) {
		return ""
	}
	return "WATCHDOG_USEC=" + v
}

// withUnitWatchdog adds the unit's WATCHDOG_USEC to env, unless the user
// gave one (-e WATCHDOG_USEC=...).
func withUnitWatchdog(env []string, e unitEnv) []string {
	kv := unitWatchdog(e)
	if kv == "" || slices.ContainsFunc(env, func(s string) bool {
		return s == "WATCHDOG_USEC" || strings.HasPrefix(s, "WATCHDOG_USEC=")
	}) {
		return env
	}
	return append(env, kv)
}
