// Package health runs a container's HEALTHCHECK: a probe every interval
// (the start interval during the start period), bounded by its timeout,
// and the container's health from the results, as Docker computes it
// (starting until the first success, unhealthy after Retries failures in
// a row outside the start period, the last five results kept). It knows
// nothing of how a probe runs: the daemon gives it a Runner (an exec in
// the container) and a Recorder (the container's record).
package health

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
)

// Docker's defaults and bounds.
const (
	DefaultInterval      = 30 * time.Second
	DefaultTimeout       = 30 * time.Second
	DefaultStartInterval = 5 * time.Second
	DefaultRetries       = 3
	// MaxLogEntries is how many results State.Health.Log keeps.
	MaxLogEntries = 5
	// MaxOutputLen bounds the output kept of one probe.
	MaxOutputLen = 4096
)

// Config is a health check with Docker's defaults filled in.
type Config struct {
	Cmd           []string
	Interval      time.Duration
	Timeout       time.Duration
	StartPeriod   time.Duration
	StartInterval time.Duration
	Retries       int
}

// Resolve turns a container's HealthConfig into a Config; ok is false
// when there is no check to run (none, or NONE).
func Resolve(hc *containertypes.HealthConfig) (cfg Config, ok bool) {
	if hc == nil || len(hc.Test) == 0 {
		return cfg, false
	}
	switch hc.Test[0] {
	case "CMD":
		cfg.Cmd = hc.Test[1:]
	case "CMD-SHELL":
		if len(hc.Test) < 2 {
			return cfg, false
		}
		cfg.Cmd = []string{"/bin/sh", "-c", hc.Test[1]}
	default:
		return cfg, false
	}
	if len(cfg.Cmd) == 0 {
		return cfg, false
	}
	or := func(v, def time.Duration) time.Duration {
		if v == 0 {
			return def
		}
		return v
	}
	cfg.Interval = or(hc.Interval, DefaultInterval)
	cfg.Timeout = or(hc.Timeout, DefaultTimeout)
	cfg.StartPeriod = hc.StartPeriod
	cfg.StartInterval = or(hc.StartInterval, DefaultStartInterval)
	cfg.Retries = hc.Retries
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	return cfg, true
}

// Runner runs a probe in the container, writing its output (stdout and
// stderr) to out, and returns its exit code. The timeout runs from the
// probe's start (as Docker's, so that the exec's own start-up is not
// counted): a probe over it is killed, and Run returns, once its output
// is all written, with timedOut. Run also kills the probe and returns
// when ctx is done.
type Runner interface {
	Run(ctx context.Context, cmd []string, timeout time.Duration, out io.Writer) (code int, timedOut bool, err error)
}

// Recorder keeps a probe's result in the container's health and returns
// the health status that follows.
type Recorder interface {
	Record(res *containertypes.HealthcheckResult) containertypes.HealthStatus
}

// Apply adds res to h as Docker does and reports whether the status
// changed. startedAt is when the container started: failures within the
// start period do not count while the container has never been healthy.
func Apply(h *containertypes.Health, res *containertypes.HealthcheckResult, cfg Config, startedAt time.Time) bool {
	old := h.Status
	h.Log = append(h.Log, res)
	if n := len(h.Log); n > MaxLogEntries {
		h.Log = append([]*containertypes.HealthcheckResult(nil), h.Log[n-MaxLogEntries:]...)
	}
	if res.ExitCode == 0 {
		h.FailingStreak = 0
		h.Status = containertypes.Healthy
	} else if h.Status != containertypes.Starting || res.Start.Sub(startedAt) >= cfg.StartPeriod {
		h.FailingStreak++
		if h.FailingStreak >= cfg.Retries {
			h.Status = containertypes.Unhealthy
		}
	}
	return h.Status != old
}

// limitedBuffer keeps the first MaxOutputLen bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := MaxOutputLen - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Probe runs one probe with cfg's timeout and returns its result.
func Probe(ctx context.Context, cfg Config, r Runner) *containertypes.HealthcheckResult {
	res := &containertypes.HealthcheckResult{Start: time.Now()}
	var out limitedBuffer
	code, timedOut, err := r.Run(ctx, cfg.Cmd, cfg.Timeout, &out)
	res.End = time.Now()
	switch {
	case timedOut:
		res.ExitCode = -1
		res.Output = fmt.Sprintf("Health check exceeded timeout (%v)", cfg.Timeout)
		if o := out.String(); o != "" {
			res.Output += ": " + o
		}
	case err != nil:
		res.ExitCode = -1
		res.Output = err.Error()
	default:
		res.ExitCode = code
		res.Output = out.String()
	}
	return res
}

// Monitor runs a container's health checks until Stop.
type Monitor struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start begins probing: the first probe comes one interval (the start
// interval during the start period) after the start, as in Docker.
func Start(cfg Config, startedAt time.Time, r Runner, rec Recorder) *Monitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Monitor{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		status := containertypes.Starting
		for {
			wait := cfg.Interval
			if status == containertypes.Starting && time.Since(startedAt) < cfg.StartPeriod {
				wait = cfg.StartInterval
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			res := Probe(ctx, cfg, r)
			if ctx.Err() != nil {
				return // stopped during the probe: the result is not the container's
			}
			status = rec.Record(res)
		}
	}()
	return m
}

// Cancel ends the checks without waiting: a probe in progress is killed
// and its result dropped.
func (m *Monitor) Cancel() { m.cancel() }

// Stop ends the checks and waits for a probe in progress to be killed.
func (m *Monitor) Stop() {
	m.cancel()
	<-m.done
}
