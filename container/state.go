package container

import (
	"fmt"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/go-units"
)

// The statuses Docker reports.
const (
	StatusCreated    = "created"
	StatusRunning    = "running"
	StatusExited     = "exited"
	StatusRemoving   = "removing"
	StatusDead       = "dead"
	StatusRestarting = "restarting"
	StatusPaused     = "paused"
)

// State is the part of the record that changes as the container runs.
type State struct {
	Status     string
	Pid        int
	ExitCode   int
	Error      string
	OOMKilled  bool
	StartedAt  time.Time
	FinishedAt time.Time
	// Health is the health check's state, for containers that have one.
	Health *containertypes.Health `json:",omitempty"`
}

// Running reports whether the container's process is alive (paused
// included: its processes are there, frozen).
func (s *State) Running() bool { return s.Status == StatusRunning || s.Status == StatusPaused }

// Restarting reports whether the restart policy is about to start the
// container again.
func (s *State) Restarting() bool { return s.Status == StatusRestarting }

// SetRunning records a successful start.
func (s *State) SetRunning(pid int) {
	s.Status = StatusRunning
	s.Pid = pid
	s.ExitCode = 0
	s.Error = ""
	s.OOMKilled = false
	s.StartedAt = time.Now().UTC()
	s.FinishedAt = time.Time{}
}

// healthSuffix is what `docker ps` adds to a running container's status.
func (s *State) healthSuffix() string {
	if s.Health == nil {
		return ""
	}
	switch s.Health.Status {
	case containertypes.Starting:
		return " (health: starting)"
	case containertypes.Healthy, containertypes.Unhealthy:
		return " (" + string(s.Health.Status) + ")"
	}
	return ""
}

// SetExited records the end of the process.
func (s *State) SetExited(code int, at time.Time, oom bool, errMsg string) {
	s.Status = StatusExited
	s.Pid = 0
	s.ExitCode = code
	s.OOMKilled = oom
	s.Error = errMsg
	if at.IsZero() {
		at = time.Now()
	}
	s.FinishedAt = at.UTC()
}

// SetStartFailed records a start that never ran the process (exit code as
// Docker gives it: 127 for a missing command, 126 otherwise).
func (s *State) SetStartFailed(code int, errMsg string) {
	s.SetExited(code, time.Now(), false, errMsg)
	if s.StartedAt.IsZero() {
		s.Status = StatusCreated
	}
}

// Summary is the human string `docker ps` shows in its STATUS column.
func (s *State) Summary(now time.Time) string {
	switch s.Status {
	case StatusRunning:
		return "Up " + units.HumanDuration(now.Sub(s.StartedAt)) + s.healthSuffix()
	case StatusExited:
		if s.FinishedAt.IsZero() {
			return fmt.Sprintf("Exited (%d)", s.ExitCode)
		}
		return fmt.Sprintf("Exited (%d) %s ago", s.ExitCode, units.HumanDuration(now.Sub(s.FinishedAt)))
	case StatusRestarting:
		return fmt.Sprintf("Restarting (%d) %s ago", s.ExitCode, units.HumanDuration(now.Sub(s.FinishedAt)))
	case StatusPaused:
		return "Up " + units.HumanDuration(now.Sub(s.StartedAt)) + " (Paused)"
	case StatusRemoving:
		return "Removal In Progress"
	case StatusDead:
		return "Dead"
	}
	return "Created"
}
