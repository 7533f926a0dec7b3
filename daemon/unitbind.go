package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/systemd"
	"github.com/sdengine/engine/pkg/unitbind"
)

// validateUnitBind checks a container's unitbind.BindToLabel at create: a
// unit name systemd would refuse is a 400 before anything exists. With
// the cgroupfs driver there is no scope to bind: the container is created
// as Docker creates one whose option the host cannot honour, with a
// warning (the CLI prints it), since our CLI sets the label by itself
// under any service.
func (d *Daemon) validateUnitBind(labels map[string]string) ([]string, error) {
	unit := labels[unitbind.BindToLabel]
	if unit == "" {
		return nil, nil
	}
	if err := unitbind.ValidateUnitName(unit); err != nil {
		return nil, fmt.Errorf("label %s: %w", unitbind.BindToLabel, err)
	}
	if d.cgroupDriver != cgroupDriverSystemd {
		return []string{fmt.Sprintf("%s=%s: the container is not tied to the unit: that needs the systemd cgroup driver (this daemon uses %s)",
			unitbind.BindToLabel, unit, d.cgroupDriver)}, nil
	}
	return nil, nil
}

// boundUnitStates are the states of a unit a container may be bound to
// at its start. BindsTo= implies Requires=: starting the scope would start
// a unit that is not running (and replace a stop job of one that is
// stopping), so a start then is refused instead.
var boundUnitStates = map[string]bool{"active": true, "activating": true, "reloading": true}

// applyUnitBind binds the container's scope to the unit its
// unitbind.BindToLabel names, with the systemd cgroup driver (with
// cgroupfs the label only warned at create). The stop of the scope by
// systemd then follows the container's own stop timeout; for a systemd
// container its KillSignal is SIGKILL already (the profile), so the
// graceful path stays the unit's own stop (our CLI's docker stop).
func (d *Daemon) applyUnitBind(c *container.Container, s *specs.Spec) error {
	unit := c.Config.Labels[unitbind.BindToLabel]
	if unit == "" {
		return nil
	}
	if d.cgroupDriver != cgroupDriverSystemd {
		slog.Debug("bind-to ignored: cgroupfs driver", "id", c.ID, "unit", unit)
		return nil
	}
	if err := unitbind.ValidateUnitName(unit); err != nil {
		return fmt.Errorf("label %s: %w", unitbind.BindToLabel, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	state, err := systemd.UnitActiveState(ctx, unit)
	if err != nil {
		return fmt.Errorf("container bound to %s: %w", unit, err)
	}
	if !boundUnitStates[state] {
		return errdefs.Conflict(fmt.Errorf("container bound to %s (label %s) cannot start: the unit is %s, not running", unit, unitbind.BindToLabel, state))
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	for k, v := range unitbind.BindScopeProperties(unit, stopTimeout(c)) {
		s.Annotations[k] = v
	}
	return nil
}

// stopTimeout is the container's stop timeout in seconds, as docker stop
// uses it (negative: wait for ever).
func stopTimeout(c *container.Container) int {
	if c.Config.StopTimeout != nil {
		return *c.Config.StopTimeout
	}
	return defaultStopTimeout
}
