// Package events is the daemon's event log: every part of the engine
// publishes what happened with one call (Log), and `GET /events` reads the
// recent past from a ring and follows what comes next. A subscriber that
// does not read loses events rather than holding up the daemon.
package events

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// Limit is how many past events are kept, as Docker keeps (eventsLimit).
const Limit = 256

// subscriberBuffer is how many events a subscriber may fall behind before
// it loses some: large enough for bursts (a prune, a compose down), small
// enough that 1000 idle subscribers cost little.
const subscriberBuffer = 256

// Publisher is what the rest of the daemon needs of the event log: one
// line per event, e.g.
//
//	d.events.Log(eventtypes.ActionCreate, eventtypes.VolumeEventType, eventtypes.Actor{ID: name, Attributes: map[string]string{"driver": "local"}})
type Publisher interface {
	Log(action eventtypes.Action, typ eventtypes.Type, actor eventtypes.Actor)
}

// Events is the event log.
type Events struct {
	mu   sync.Mutex
	ring []eventtypes.Message // the last Limit events, oldest first
	subs map[*Subscription]struct{}
	// now is time.Now, replaced by tests.
	now func() time.Time
}

// New makes an empty event log.
func New() *Events {
	return &Events{subs: map[*Subscription]struct{}{}, now: time.Now}
}

var _ Publisher = (*Events)(nil)

// Log records an event and hands it to every subscriber whose filter it
// passes. It never blocks on a subscriber.
func (e *Events) Log(action eventtypes.Action, typ eventtypes.Type, actor eventtypes.Actor) {
	now := e.now()
	if actor.Attributes == nil {
		actor.Attributes = map[string]string{}
	}
	m := eventtypes.Message{
		Type: typ, Action: action, Actor: actor, Scope: "local",
		Time: now.Unix(), TimeNano: now.UnixNano(),
	}
	// The fields older clients read (deprecated in the API, still sent).
	switch typ {
	case eventtypes.ContainerEventType:
		//lint:ignore SA1019 Docker v28 still sends them, and docker-py reads them
		m.ID, m.Status, m.From = actor.ID, string(action), actor.Attributes["image"]
	case eventtypes.ImageEventType:
		//lint:ignore SA1019 as above
		m.ID, m.Status = actor.ID, string(action)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ring) == Limit {
		copy(e.ring, e.ring[1:])
		e.ring = e.ring[:Limit-1]
	}
	e.ring = append(e.ring, m)
	for s := range e.subs {
		if !s.filter.Match(m) {
			continue
		}
		select {
		case s.ch <- m:
		default:
			s.dropped.Add(1)
		}
	}
}

// Subscription is one reader of the log.
type Subscription struct {
	ch      chan eventtypes.Message
	filter  Filter
	dropped atomic.Int64
}

// C delivers the events logged after the subscription, that pass its filter.
func (s *Subscription) C() <-chan eventtypes.Message { return s.ch }

// Dropped counts the events lost because the subscriber fell behind.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Subscribe returns the kept events between since and until (none when both
// are zero, as Docker answers) that pass f, and a subscription to the ones
// to come. Cancel ends the subscription.
func (e *Events) Subscribe(since, until time.Time, f Filter) ([]eventtypes.Message, *Subscription) {
	s := &Subscription{ch: make(chan eventtypes.Message, subscriberBuffer), filter: f}
	e.mu.Lock()
	defer e.mu.Unlock()
	var past []eventtypes.Message
	if !since.IsZero() || !until.IsZero() {
		for _, m := range e.ring {
			t := time.Unix(0, m.TimeNano)
			if !since.IsZero() && t.Before(since) {
				continue
			}
			if !until.IsZero() && t.After(until) {
				continue
			}
			if f.Match(m) {
				past = append(past, m)
			}
		}
	}
	e.subs[s] = struct{}{}
	return past, s
}

// Cancel ends s: it receives nothing more.
func (e *Events) Cancel(s *Subscription) {
	e.mu.Lock()
	delete(e.subs, s)
	e.mu.Unlock()
}

// Subscribers counts the current subscriptions (docker info's
// NEventsListener).
func (e *Events) Subscribers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs)
}

// Filter selects events as `docker events --filter` does.
type Filter struct{ Args filters.Args }

// AcceptedFilters are the keys `--filter` takes for events.
var AcceptedFilters = map[string]bool{
	"config": true, "container": true, "daemon": true, "event": true, "image": true,
	"label": true, "network": true, "node": true, "plugin": true, "scope": true,
	"secret": true, "service": true, "type": true, "volume": true,
}

// Match reports whether m passes every key of the filter.
func (f Filter) Match(m eventtypes.Message) bool {
	a := f.Args
	if a.Len() == 0 {
		return true
	}
	attrs := m.Actor.Attributes
	action := string(m.Action)
	// exec_start: sh -c ... and health_status: healthy match their prefix.
	prefix, _, _ := strings.Cut(action, ":")
	if a.Contains("event") && !a.ExactMatch("event", action) && !a.ExactMatch("event", prefix) {
		return false
	}
	if a.Contains("type") && !a.ExactMatch("type", string(m.Type)) {
		return false
	}
	if a.Contains("scope") && !a.ExactMatch("scope", m.Scope) {
		return false
	}
	if a.Contains("label") && !a.MatchKVList("label", attrs) {
		return false
	}
	// A key naming an object matches events of that object's type, by ID
	// or name; events of other types do not pass it.
	typed := func(key string, typ eventtypes.Type) bool {
		if !a.Contains(key) {
			return true
		}
		if m.Type != typ {
			return false
		}
		return a.ExactMatch(key, m.Actor.ID) || a.ExactMatch(key, attrs["name"]) || a.FuzzyMatch(key, m.Actor.ID)
	}
	if !typed("container", eventtypes.ContainerEventType) || !typed("volume", eventtypes.VolumeEventType) ||
		!typed("network", eventtypes.NetworkEventType) || !typed("daemon", eventtypes.DaemonEventType) ||
		!typed("plugin", eventtypes.PluginEventType) || !typed("service", eventtypes.ServiceEventType) ||
		!typed("node", eventtypes.NodeEventType) || !typed("secret", eventtypes.SecretEventType) ||
		!typed("config", eventtypes.ConfigEventType) {
		return false
	}
	if a.Contains("image") {
		// An image is named by an image event's ID or name and by a
		// container event's image attribute, with or without its tag.
		var img string
		switch m.Type {
		case eventtypes.ImageEventType:
			img = m.Actor.ID
			if n := attrs["name"]; n != "" && (a.ExactMatch("image", n) || a.ExactMatch("image", stripTag(n))) {
				return true
			}
		case eventtypes.ContainerEventType:
			img = attrs["image"]
		default:
			return false
		}
		if !a.ExactMatch("image", img) && !a.ExactMatch("image", stripTag(img)) && !a.FuzzyMatch("image", img) {
			return false
		}
	}
	return true
}

// stripTag drops a reference's tag (not a registry's port).
func stripTag(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}
