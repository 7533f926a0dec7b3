package sdnotify

import (
	"fmt"
	"github.com/sdengine/engine/pkg/notifymsg"
	"sync"
	"time"
)

// The health a container's notifications give, in Docker's words.
const (
	Starting  = "starting"
	Healthy   = "healthy"
	Unhealthy = "unhealthy"
)

// Entry is a change worth recording: the health that follows and what
// caused it (the notification's fields with the current STATUS=, or the
// watchdog's lapse). Failing is true when the cause is a failure.
type Entry struct {
	Health  string
	Output  string
	Failing bool
	At      time.Time
}

// Tracker is a container's readiness from its notifications: starting
// until READY=1, then healthy; unhealthy when the watchdog lapses (no
// WATCHDOG=1 within WATCHDOG_USEC) or the sender says WATCHDOG=trigger,
// until its next WATCHDOG=1. Changes are reported to the record function,
// from Apply's caller or from the watchdog's timer.
type Tracker struct {
	mu sync.Mutex
	// recMu keeps entries in the order of the changes: taken before mu
	// is released, held while record runs (which may take the
	// container's lock, so record never runs under mu, which Close takes
	// under the container's lock).
	recMu     sync.Mutex
	record    func(Entry)
	ready     bool
	reloading bool
	stopping  bool
	lapsed    bool
	status    string
	interval  time.Duration
	deadline  time.Time
	timer     *time.Timer
	closed    bool
	now       func() time.Time
}

// NewTracker starts in Starting; record is called with each change.
func NewTracker(record func(Entry)) *Tracker {
	return &Tracker{record: record, now: time.Now}
}

// Restore takes the health a previous daemon recorded (a container that
// kept running across a daemon restart): healthy or unhealthy mean
// READY=1 came, unhealthy that the watchdog lapsed (the next WATCHDOG=1
// ends it). The watchdog starts again with the sender's next
// WATCHDOG_USEC=.
func (t *Tracker) Restore(health, status string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ready = health == Healthy || health == Unhealthy
	t.lapsed = health == Unhealthy
	t.status = status
}

// Health is the current health.
func (t *Tracker) Health() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.healthLocked()
}

func (t *Tracker) healthLocked() string {
	switch {
	case t.lapsed:
		return Unhealthy
	case t.ready:
		return Healthy
	}
	return Starting
}

// Apply takes a message in and reports whether it changed anything worth
// an entry (a plain WATCHDOG=1 ping changes nothing unless it ends a
// lapse); the entry is given to record before Apply returns.
func (t *Tracker) Apply(m notifymsg.Message) bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	before := t.healthLocked()
	changed := false
	now := t.now()
	if m.HasStatus && m.Status != t.status {
		t.status, changed = m.Status, true
	}
	if m.Reloading && !t.reloading {
		t.reloading, changed = true, true
	}
	if m.Ready {
		changed = changed || !t.ready || t.reloading
		t.ready, t.reloading = true, false
	}
	if m.Stopping && !t.stopping {
		// A lapse while stopping means nothing: the watchdog is off.
		t.stopping, changed = true, true
		t.stopTimerLocked()
	}
	if m.WatchdogUsec > 0 && !t.stopping {
		t.interval = time.Duration(min(m.WatchdogUsec, uint64(1<<62)/1000)) * time.Microsecond
		t.armLocked(now.Add(t.interval))
	}
	if m.Watchdog {
		if t.lapsed {
			t.lapsed, changed = false, true
		}
		if t.interval > 0 && !t.stopping {
			t.armLocked(now.Add(t.interval))
		}
	}
	if m.WatchdogTrigger && !t.lapsed {
		t.lapsed, changed = true, true
	}
	if m.ExtendTimeoutUsec > 0 && t.timer != nil {
		// More time for the step in progress: the watchdog waits at
		// least that long from now.
		ext := now.Add(time.Duration(min(m.ExtendTimeoutUsec, uint64(1<<62)/1000)) * time.Microsecond)
		if ext.After(t.deadline) {
			t.armLocked(ext)
		}
	}
	if !changed && t.healthLocked() == before {
		t.mu.Unlock()
		return false
	}
	out := m
	out.MainPID = 0
	out.Status, out.HasStatus = t.status, t.status != ""
	e := Entry{Health: t.healthLocked(), Output: out.Format(0), Failing: m.WatchdogTrigger, At: now}
	t.recMu.Lock()
	t.mu.Unlock()
	defer t.recMu.Unlock()
	t.record(e)
	return true
}

// armLocked sets the watchdog's deadline.
func (t *Tracker) armLocked(deadline time.Time) {
	t.deadline = deadline
	d := max(deadline.Sub(t.now()), 0)
	if t.timer == nil {
		t.timer = time.AfterFunc(d, t.lapse)
		return
	}
	t.timer.Reset(d)
}

func (t *Tracker) stopTimerLocked() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.interval = 0
}

// lapse runs when the deadline passes without a ping.
func (t *Tracker) lapse() {
	t.mu.Lock()
	if t.closed || t.lapsed || t.timer == nil || t.now().Before(t.deadline) {
		// Stopped, already lapsed, or re-armed while this waited.
		t.mu.Unlock()
		return
	}
	t.lapsed = true
	e := Entry{
		Health:  Unhealthy,
		Output:  fmt.Sprintf("watchdog timeout: no WATCHDOG=1 within %v", t.interval),
		Failing: true, At: t.now(),
	}
	t.recMu.Lock()
	t.mu.Unlock()
	defer t.recMu.Unlock()
	t.record(e)
}

// Close stops the watchdog; nothing is recorded after it.
func (t *Tracker) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.stopTimerLocked()
}
