package container

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sdengine/engine/pkg/systemd"
)

// unitEnv is what the CLI reads of its surroundings to tie a container to
// the systemd service that runs it; a value so that tests can give one.
type unitEnv struct {
	getenv      func(string) string
	procCgroup  string // the text of /proc/self/cgroup
	inContainer bool   // /run/systemd/container exists
	localDaemon bool   // the daemon is reached over its unix socket
	pid         int
}

// hostUnitEnv reads the real ones.
func hostUnitEnv(daemonHost string) unitEnv {
	cg, _ := os.ReadFile("/proc/self/cgroup")
	_, err := os.Stat("/run/systemd/container")
	return unitEnv{
		getenv:      os.Getenv,
		procCgroup:  string(cg),
		inContainer: err == nil,
		localDaemon: strings.HasPrefix(daemonHost, "unix://"),
		pid:         os.Getpid(),
	}
}

// serviceToBind is the service a foreground `docker run` ties its
// container to (systemd.BindToLabel), or "". The CLI must be a service's
// process: systemd gives those $INVOCATION_ID (a login shell has none),
// and its cgroup then names the service. A session scope, a CLI inside a
// container (whose cgroup paths and units are the container's own, not
// those of the daemon's systemd) or a daemon reached over the network
// (another machine's systemd) get no tie.
func serviceToBind(e unitEnv) string {
	if e.getenv("INVOCATION_ID") == "" || e.inContainer || !e.localDaemon {
		return ""
	}
	return systemd.ServiceFromCgroup(e.procCgroup)
}

// bindToService sets the label on a container run in the foreground by a
// service, unless the user set it (an empty value turns the tie off).
func bindToService(labels map[string]string, e unitEnv) map[string]string {
	if _, ok := labels[systemd.BindToLabel]; ok {
		return labels
	}
	unit := serviceToBind(e)
	if unit == "" {
		return labels
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[systemd.BindToLabel] = unit
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
