package daemon

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/health"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/daemon/sdnotify"
	"github.com/sdengine/engine/daemon/systemdprofile"
	"github.com/sdengine/engine/pkg/notifymsg"
	runconfigopts "github.com/sdengine/engine/runconfig/opts"
)

// ActionSdnotify is the container event that carries a notification's
// fields as attributes (notifymsg.Message.Attributes), for the CLI that
// relays them to its own unit and for any other tool.
const ActionSdnotify eventtypes.Action = "sdnotify"

// pingEventEvery bounds the events that plain WATCHDOG=1 pings cause.
const pingEventEvery = time.Second

// notifier is a running container's notify socket and readiness.
type notifier struct {
	l  *sdnotify.Listener
	tr *sdnotify.Tracker

	mu       sync.Mutex
	lastPing time.Time
}

// notifyWanted says whether c gets a notify socket.
func notifyWanted(c *container.Container) bool {
	switch strings.ToLower(c.Config.Labels[notifymsg.Label]) {
	case "true", "1", "yes", "container":
		return true
	case "false", "0", "no":
		return false
	}
	return c.InitSystem == runconfigopts.InitSystemd
}

// applyNotify gives the spec $NOTIFY_SOCKET at /run/host/notify when c
// wants a notify socket, and records the host directory the socket is
// made in. The systemd profile's /run/host is used when it made one; a
// container without the profile gets a /run/host of its own, bound
// read-only, holding only the socket. A user's mount at /run/host (or
// above or below it) leaves the container without a socket: there is
// nowhere to put it. The caller holds c's lock.
func (d *Daemon) applyNotify(c *container.Container, spec *specs.Spec) error {
	c.NotifyDir = ""
	if !notifyWanted(c) {
		return nil
	}
	dir := systemdprofile.RunHostDir(c.Root)
	// The systemd profile's /run/host (below its /run tmpfs) is ours.
	ours := slices.ContainsFunc(spec.Mounts, func(m specs.Mount) bool {
		return path.Clean(m.Destination) == systemdprofile.RunHost && m.Source == dir
	})
	if !ours {
		for _, m := range spec.Mounts {
			d := path.Clean(m.Destination)
			if d == systemdprofile.RunHost || (d != "/" && strings.HasPrefix(systemdprofile.RunHost, d+"/")) ||
				strings.HasPrefix(d, systemdprofile.RunHost+"/") {
				// The mount point would be made in the user's mount.
				slog.Info("no notify socket: the user mounted /run/host, or above or below it", "id", c.ID, "mount", d)
				return nil
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return err // the "notify socket" spec step names it
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err // the "notify socket" spec step names it
		}
		spec.Mounts = append(spec.Mounts, systemdprofile.RunHostMount(dir))
	}
	// The user's NOTIFY_SOCKET wins: it names a socket of their own.
	if !hasEnv(spec.Process.Env, "NOTIFY_SOCKET") {
		spec.Process.Env = append(spec.Process.Env, "NOTIFY_SOCKET="+sdnotify.ContainerPath)
	}
	c.NotifyDir = dir
	return nil
}

func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// startNotify listens on c's notify socket, before its process runs (and
// again after a daemon restart, restored: the container's readiness is
// its record's). The caller holds c's lock.
func (d *Daemon) startNotify(c *container.Container, restored bool) error {
	if c.NotifyDir == "" {
		return nil
	}
	n := &notifier{}
	n.tr = sdnotify.NewTracker(func(e sdnotify.Entry) { d.recordNotify(c, n, e) })
	if restored && c.State.Health != nil {
		n.tr.Restore(string(c.State.Health.Status), lastStatus(c.State.Health))
	}
	l, err := sdnotify.Listen(c.NotifyDir, func(pid int) bool { return pidInContainer(pid, c.ID) }, func(m notifymsg.Message, pid int) {
		d.handleNotify(c, n, m)
	})
	if err != nil {
		n.tr.Close()
		return err
	}
	n.l = l
	if old, loaded := d.notifiers.Swap(c.ID, n); loaded {
		old.(*notifier).close()
	}
	return nil
}

// initNotifyHealth makes the notifications c's health when it has no
// HEALTHCHECK: starting until READY=1. Called right after startHealth.
func (d *Daemon) initNotifyHealth(c *container.Container) {
	if c.NotifyDir == "" {
		return
	}
	if _, ok := health.Resolve(c.Config.Healthcheck); ok {
		return // the health check decides; notifications are events only
	}
	c.State.Health = &containertypes.Health{Status: containertypes.Starting, Log: []*containertypes.HealthcheckResult{}}
	// A restarted daemon takes the readiness from the record.
	if err := c.SaveLocked(); err != nil {
		slog.Error("save notify health", "id", c.ID, "err", err)
	}
}

// stopNotify closes c's socket at its exit (or a failed start). It does
// not wait for a message in hand, which records under c's lock, held by
// the caller: the record is dropped since c no longer has a notifier.
func (d *Daemon) stopNotify(c *container.Container) {
	if v, ok := d.notifiers.LoadAndDelete(c.ID); ok {
		v.(*notifier).close()
	}
}

// closeNotifiers closes every socket (a live-restore shutdown: the next
// daemon listens again).
func (d *Daemon) closeNotifiers() {
	d.notifiers.Range(func(k, v any) bool {
		d.notifiers.Delete(k)
		v.(*notifier).close()
		return true
	})
}

func (n *notifier) close() {
	n.tr.Close()
	go n.l.Close()
}

// handleNotify applies a message and publishes it as an `sdnotify` event;
// plain WATCHDOG=1 pings make an event at most every pingEventEvery.
func (d *Daemon) handleNotify(c *container.Container, n *notifier, m notifymsg.Message) {
	n.tr.Apply(m)
	if m.Watchdog && m == (notifymsg.Message{Watchdog: true}) {
		n.mu.Lock()
		skip := time.Since(n.lastPing) < pingEventEvery
		if !skip {
			n.lastPing = time.Now()
		}
		n.mu.Unlock()
		if skip {
			return
		}
	}
	if v, ok := d.notifiers.Load(c.ID); !ok || v.(*notifier) != n {
		return
	}
	d.containerEvent(c, ActionSdnotify, m.Attributes())
}

// recordNotify keeps a readiness change in c's State.Health, unless a
// HEALTHCHECK owns it, and logs health_status when the status changes.
func (d *Daemon) recordNotify(c *container.Container, n *notifier, e sdnotify.Entry) {
	c.Lock()
	if v, ok := d.notifiers.Load(c.ID); !ok || v.(*notifier) != n || !c.State.Running() {
		c.Unlock()
		return
	}
	h := c.State.Health
	if _, hc := health.Resolve(c.Config.Healthcheck); hc || h == nil {
		c.Unlock()
		return
	}
	old := h.Status
	h.Status = containertypes.HealthStatus(e.Health)
	code := 0
	switch {
	case e.Health == sdnotify.Healthy:
		h.FailingStreak = 0
	case e.Failing:
		h.FailingStreak++
		code = 1
	}
	h.Log = append(h.Log, &containertypes.HealthcheckResult{Start: e.At, End: e.At, ExitCode: code, Output: e.Output})
	if k := len(h.Log); k > health.MaxLogEntries {
		h.Log = append([]*containertypes.HealthcheckResult(nil), h.Log[k-health.MaxLogEntries:]...)
	}
	if err := c.SaveLocked(); err != nil {
		slog.Debug("save notify health", "id", c.ID, "err", err)
	}
	status := h.Status
	c.Unlock()
	if status != old {
		d.containerEvent(c, eventtypes.Action(string(eventtypes.ActionHealthStatus)+": "+status), nil)
	}
}

// lastStatus is the STATUS= of the newest entry of h's log.
func lastStatus(h *containertypes.Health) string {
	for i := len(h.Log) - 1; i >= 0; i-- {
		for _, l := range strings.Split(h.Log[i].Output, "\n") {
			if s, ok := strings.CutPrefix(l, "STATUS="); ok {
				return s
			}
		}
	}
	return ""
}

// pidInContainer says whether the process pid is one of container id's:
// its cgroup (the payload cgroup, or a cgroup systemd in the container
// made below it) names the container, with either cgroup driver
// (<parent>/<id>/payload/..., docker-<id>.scope/...).
func pidInContainer(pid int, id string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && cgroupIsContainers(string(b), id)
}

// cgroupIsContainers reads /proc/PID/cgroup's lines.
func cgroupIsContainers(procCgroup, id string) bool {
	sc := bufio.NewScanner(strings.NewReader(procCgroup))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		p := parts[2] + "/"
		if strings.Contains(p, "/"+id+"/"+oci.PayloadCgroup+"/") || strings.Contains(p, "/docker-"+id+".scope/") {
			return true
		}
	}
	return false
}
