package image

import (
	"maps"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/opencontainers/go-digest"
)

// EventFunc receives the image events of the store's operations, for the
// daemon's event log: the action, the actor's ID and its attributes (the
// image's labels and "name", as Docker sends them).
type EventFunc func(action eventtypes.Action, id string, attrs map[string]string)

// SetEvents makes the store report its operations to f (before it is
// used; nil reports nothing). The store calls f with its own lock held,
// so f must not call back into the store.
func (s *Store) SetEvents(f EventFunc) { s.events = f }

// event reports one operation on the image id, with its labels (none when
// it is gone, as after a delete, as in Docker).
// Docker names the image by its ID except for a tag, named by the tag.
func (s *Store) event(action eventtypes.Action, id digest.Digest, name string, labels map[string]string) {
	if s.events == nil {
		return
	}
	attrs := maps.Clone(labels)
	if attrs == nil {
		attrs = map[string]string{}
	}
	if name == "" {
		name = id.String()
	}
	attrs["name"] = name
	s.events(action, id.String(), attrs)
}
