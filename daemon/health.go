package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/health"
)

// startHealth begins the container's health checks, if it has one; the
// caller holds c's lock, right after the start.
func (d *Daemon) startHealth(c *container.Container, task execdriver.Task) {
	cfg, ok := health.Resolve(c.Config.Healthcheck)
	if !ok {
		c.State.Health = nil
		return
	}
	if c.State.Health == nil {
		c.State.Health = &containertypes.Health{Log: []*containertypes.HealthcheckResult{}}
	}
	c.State.Health.Status = containertypes.Starting
	c.State.Health.FailingStreak = 0
	m := health.Start(cfg, c.State.StartedAt, &probeRunner{d: d, c: c}, &healthRecorder{d: d, c: c, cfg: cfg})
	if old, loaded := d.healthMonitors.Swap(c.ID, m); loaded {
		old.(*health.Monitor).Cancel()
	}
}

// resumeHealth begins the checks again for a container that kept running
// across a daemon restart: its status and failing streak go on from what
// the record holds (a healthy container stays healthy until a probe says
// otherwise), as the interval's count starts again. Without a
// HEALTHCHECK the record's health (one sd_notify READY=1 gave) is left
// alone. The caller holds c's lock.
func (d *Daemon) resumeHealth(c *container.Container) {
	cfg, ok := health.Resolve(c.Config.Healthcheck)
	if !ok {
		return
	}
	if c.State.Health == nil {
		c.State.Health = &containertypes.Health{Status: containertypes.Starting, Log: []*containertypes.HealthcheckResult{}}
	}
	m := health.Start(cfg, c.State.StartedAt, &probeRunner{d: d, c: c}, &healthRecorder{d: d, c: c, cfg: cfg})
	if old, loaded := d.healthMonitors.Swap(c.ID, m); loaded {
		old.(*health.Monitor).Cancel()
	}
}

// stopHealth ends the checks at the container's exit. It does not wait
// for a probe in progress (which records under c's lock, held by the
// caller): the probe is killed and its result dropped.
func (d *Daemon) stopHealth(c *container.Container) {
	if m, ok := d.healthMonitors.LoadAndDelete(c.ID); ok {
		m.(*health.Monitor).Cancel()
	}
}

// healthRecorder keeps results in the container's record and logs a
// health_status event when the status changes.
type healthRecorder struct {
	d   *Daemon
	c   *container.Container
	cfg health.Config
}

func (r *healthRecorder) Record(res *containertypes.HealthcheckResult) containertypes.HealthStatus {
	c := r.c
	c.Lock()
	h := c.State.Health
	if h == nil || !c.State.Running() {
		c.Unlock()
		return containertypes.NoHealthcheck
	}
	changed := health.Apply(h, res, r.cfg, c.State.StartedAt)
	status := h.Status
	if err := c.SaveLocked(); err != nil {
		slog.Debug("save health", "id", c.ID, "err", err)
	}
	c.Unlock()
	if changed {
		r.d.containerEvent(c, eventtypes.Action(string(eventtypes.ActionHealthStatus)+": "+status), nil)
	}
	return status
}

// probeRunner runs a probe as an exec in the container (user, working
// directory and environment of the container), killed when ctx ends.
type probeRunner struct {
	d *Daemon
	c *container.Container
}

func (p *probeRunner) Run(ctx context.Context, cmd []string, timeout time.Duration, out io.Writer) (int, bool, error) {
	return p.d.execSync(ctx, p.c, cmd, timeout, out, out)
}

// imageHealthcheck reads the HEALTHCHECK of an image's config.
func imageHealthcheck(raw []byte) *containertypes.HealthConfig {
	var v struct {
		Config struct {
			Healthcheck *containertypes.HealthConfig `json:"Healthcheck"`
		} `json:"config"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return v.Config.Healthcheck
}

// mergeHealthcheck carries the image's health check into the container's
// config, as Docker does: the user's fields win, the image fills the rest.
func mergeHealthcheck(c *containertypes.Config, img *containertypes.HealthConfig) {
	if img == nil {
		return
	}
	if c.Healthcheck == nil {
		hc := *img
		c.Healthcheck = &hc
		return
	}
	h := c.Healthcheck
	if len(h.Test) == 0 {
		h.Test = img.Test
	}
	if h.Interval == 0 {
		h.Interval = img.Interval
	}
	if h.Timeout == 0 {
		h.Timeout = img.Timeout
	}
	if h.StartPeriod == 0 {
		h.StartPeriod = img.StartPeriod
	}
	if h.StartInterval == 0 {
		h.StartInterval = img.StartInterval
	}
	if h.Retries == 0 {
		h.Retries = img.Retries
	}
}
