package shim

import (
	"errors"
	"fmt"

	"github.com/opencontainers/cgroups"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/pkg/errdefs"
)

// pause freezes the container's processes (libcontainer freezes the
// payload cgroup, where they all are, execs included).
func (s *shim) pause() error {
	if err := s.container.Pause(); err != nil {
		return errdefs.Conflict(fmt.Errorf("pausing container %s: %w", s.id, err))
	}
	return nil
}

func (s *shim) resume() error {
	if err := s.container.Resume(); err != nil {
		return errdefs.Conflict(fmt.Errorf("unpausing container %s: %w", s.id, err))
	}
	return nil
}

// update applies new limits to the limits cgroup, which holds the
// container to them, then to the payload's copy, which programs in the
// container read (as in Docker, the container's own cgroup shows them).
func (s *shim) update(u *shimproto.Update) error {
	if u == nil {
		return errdefs.InvalidParameter(errors.New("update without limits"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits == nil || s.limitsRes == nil {
		return errdefs.Conflict(fmt.Errorf("container %s has no limits cgroup", s.id))
	}
	res := *s.limitsRes
	u.Apply(&res)
	// The device rules are set once, at creation: an update leaves them.
	res.SkipDevices = true
	config := s.container.Config()
	// A limit the kernel holds children to (a CFS quota on v1) cannot
	// go below the payload's copy: lowered, the copy goes first.
	payloadFirst := false
	if err := s.limits.Set(&res); err != nil {
		payloadFirst = true
		s.log.Debug("shim: limits cgroup refused the update before the payload's", "id", s.id, "err", err)
	}
	if config.Cgroups != nil && config.Cgroups.Resources != nil {
		pr := *config.Cgroups.Resources
		// The device rules go along unchanged (libcontainer refuses
		// execs in a container whose config skips them).
		u.Apply(&pr)
		cg := *config.Cgroups
		cg.Resources = &pr
		config.Cgroups = &cg
		if err := s.container.Set(config); err != nil {
			return fmt.Errorf("updating the container's cgroup: %w", err)
		}
	}
	if payloadFirst {
		if err := s.limits.Set(&res); err != nil {
			return fmt.Errorf("updating the limits cgroup: %w", err)
		}
	}
	res.SkipDevices = s.limitsRes.SkipDevices
	*s.limitsRes = res
	return nil
}

// stats reads the limits cgroup, which holds the whole container.
func (s *shim) stats() (*cgroups.Stats, error) {
	if s.limits == nil {
		return nil, errdefs.Conflict(fmt.Errorf("container %s has no limits cgroup", s.id))
	}
	st, err := s.limits.GetStats()
	if err != nil {
		return nil, fmt.Errorf("reading cgroup statistics: %w", err)
	}
	return st, nil
}
