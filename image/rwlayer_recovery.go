package image

import (
	"fmt"
	"sort"
)

// RWLayerIDs lists the containers that have a writable layer record, so
// that the daemon's recovery can find the layers of containers it has no
// record of.
func (s *Store) RWLayerIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.mounts))
	for id := range s.mounts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// DiscardRWLayer removes whatever a container's writable layer left, with
// or without its record: a create cut short between making the layer's
// directory and writing its record leaves a directory that only the
// container's ID names (a writable layer's cache ID is its container's ID).
// Discarding what does not exist is not an error.
func (s *Store) DiscardRWLayer(containerID string) error {
	if err := s.RemoveRWLayer(containerID); err != nil {
		return err
	}
	s.mu.Lock()
	for _, l := range s.layers {
		if l.CacheID == containerID {
			// Not a writable layer at all: an image layer's random cache
			// ID can never be a container's, but do not bet on it.
			s.mu.Unlock()
			return nil
		}
	}
	s.mu.Unlock()
	if err := s.driver.Remove(containerID); err != nil {
		return fmt.Errorf("discard RW layer of %s: %w", containerID, err)
	}
	return nil
}
