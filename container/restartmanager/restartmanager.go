// Package restartmanager decides whether a container that exited is
// started again, and when: Docker's restart policies (no, on-failure[:N],
// always, unless-stopped) with its back-off (100 ms, doubling up to a
// minute, back to 100 ms after a run of 10 s or more). One Manager per
// container run by the daemon; it keeps no state on disk (the count is the
// container's RestartCount).
package restartmanager

import (
	"errors"
	"sync"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
)

// The back-off, as Docker's.
const (
	initialDelay = 100 * time.Millisecond
	maxDelay     = time.Minute
	// resetAfter is how long a run must last for the delay to start over.
	resetAfter = 10 * time.Second
)

// ErrCanceled is what a pending restart's channel carries when a stop or
// a kill cancelled it.
var ErrCanceled = errors.New("restart canceled")

// Manager applies one container's restart policy.
type Manager struct {
	mu       sync.Mutex
	policy   containertypes.RestartPolicy
	count    int
	delay    time.Duration
	pending  bool
	canceled bool
	cancel   chan struct{}
}

// New makes a manager for policy, with count restarts already done.
func New(policy containertypes.RestartPolicy, count int) *Manager {
	return &Manager{policy: policy, count: count, cancel: make(chan struct{})}
}

// SetPolicy changes the policy (docker update --restart); it applies from
// the next exit on.
func (m *Manager) SetPolicy(p containertypes.RestartPolicy) {
	m.mu.Lock()
	m.policy = p
	m.mu.Unlock()
}

// Delay is the wait before the restart last decided (for tests and logs).
func (m *Manager) Delay() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.delay
}

// ShouldRestart decides on an exit with exitCode after a run of ran.
// manuallyStopped is the user's stop (unless-stopped respects it). When
// it says yes, the returned channel is closed once the back-off delay has
// passed, or carries ErrCanceled if Cancel came first.
func (m *Manager) ShouldRestart(exitCode int, manuallyStopped bool, ran time.Duration) (bool, <-chan error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.canceled || m.pending {
		return false, nil
	}
	if !Restarts(m.policy, exitCode, manuallyStopped, m.count) {
		return false, nil
	}
	switch {
	case ran >= resetAfter || m.delay == 0:
		m.delay = initialDelay
	default:
		m.delay = min(2*m.delay, maxDelay)
	}
	m.count++
	m.pending = true
	ch := make(chan error, 1)
	timer := time.NewTimer(m.delay)
	go func() {
		defer timer.Stop()
		select {
		case <-timer.C:
			m.mu.Lock()
			m.pending = false
			m.mu.Unlock()
			close(ch)
		case <-m.cancel:
			m.mu.Lock()
			m.pending = false
			m.mu.Unlock()
			ch <- ErrCanceled
			close(ch)
		}
	}()
	return true, ch
}

// Restarts is the policy's answer, without back-off: whether a container
// that exited with exitCode, after count restarts, starts again.
func Restarts(p containertypes.RestartPolicy, exitCode int, manuallyStopped bool, count int) bool {
	switch p.Name {
	case containertypes.RestartPolicyAlways:
		return true
	case containertypes.RestartPolicyUnlessStopped:
		return !manuallyStopped
	case containertypes.RestartPolicyOnFailure:
		// A maximum of 0 means no maximum.
		return exitCode != 0 && (p.MaximumRetryCount == 0 || count < p.MaximumRetryCount)
	}
	return false
}

// Cancel stops a pending restart and every later one: the container's
// stop signal was sent by the user. A new Manager starts over.
func (m *Manager) Cancel() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.canceled {
		m.canceled = true
		close(m.cancel)
	}
}

// Pending reports whether a restart waits for its delay.
func (m *Manager) Pending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pending
}

// Canceled reports whether Cancel was called.
func (m *Manager) Canceled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.canceled
}
