package events

import (
	"testing"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

func ctr(id, name, image string, labels map[string]string) eventtypes.Actor {
	a := map[string]string{"name": name, "image": image}
	for k, v := range labels {
		a[k] = v
	}
	return eventtypes.Actor{ID: id, Attributes: a}
}

func TestRingAndSince(t *testing.T) {
	e := New()
	base := time.Unix(1000, 0)
	n := 0
	e.now = func() time.Time { n++; return base.Add(time.Duration(n) * time.Second) }
	for i := 0; i < Limit+10; i++ {
		e.Log(eventtypes.ActionStart, eventtypes.ContainerEventType, ctr("c", "n", "busybox", nil))
	}
	// No since/until: nothing from the past.
	past, sub := e.Subscribe(time.Time{}, time.Time{}, Filter{})
	e.Cancel(sub)
	if len(past) != 0 {
		t.Fatalf("past without since: %d", len(past))
	}
	past, sub = e.Subscribe(base, time.Time{}, Filter{})
	e.Cancel(sub)
	if len(past) != Limit {
		t.Fatalf("kept %d, want %d", len(past), Limit)
	}
	past, sub = e.Subscribe(base.Add(time.Duration(Limit+5)*time.Second), base.Add(time.Duration(Limit+7)*time.Second), Filter{})
	e.Cancel(sub)
	if len(past) != 3 {
		t.Fatalf("between since and until: %d, want 3", len(past))
	}
	//lint:ignore SA1019 the fields older clients read must be there
	if past[0].Status != "start" || past[0].ID != "c" || past[0].From != "busybox" || past[0].Scope != "local" {
		t.Fatalf("legacy fields: %+v", past[0])
	}
}

func TestFilters(t *testing.T) {
	die := eventtypes.Message{Type: eventtypes.ContainerEventType, Action: eventtypes.ActionDie, Actor: ctr("abcdef", "web", "busybox:latest", map[string]string{"app": "x"})}
	exec := eventtypes.Message{Type: eventtypes.ContainerEventType, Action: "exec_start: sh -c true", Actor: ctr("abcdef", "web", "busybox:latest", nil)}
	vol := eventtypes.Message{Type: eventtypes.VolumeEventType, Action: eventtypes.ActionCreate, Actor: eventtypes.Actor{ID: "v1", Attributes: map[string]string{"driver": "local"}}}
	img := eventtypes.Message{Type: eventtypes.ImageEventType, Action: eventtypes.ActionTag, Actor: eventtypes.Actor{ID: "sha256:1234", Attributes: map[string]string{"name": "busybox:latest"}}}
	pull := eventtypes.Message{Type: eventtypes.ImageEventType, Action: eventtypes.ActionPull, Actor: eventtypes.Actor{ID: "busybox:latest", Attributes: map[string]string{"name": "busybox"}}}
	conn := eventtypes.Message{Type: eventtypes.NetworkEventType, Action: eventtypes.ActionConnect, Scope: "local",
		Actor: eventtypes.Actor{ID: "9f8e7d", Attributes: map[string]string{"name": "front", "type": "bridge", "container": "abcdef"}}}
	reload := eventtypes.Message{Type: eventtypes.DaemonEventType, Action: eventtypes.ActionReload, Scope: "local",
		Actor: eventtypes.Actor{ID: "host1", Attributes: map[string]string{"name": "host1", "debug": "true"}}}
	for _, tc := range []struct {
		args []filters.KeyValuePair
		m    eventtypes.Message
		want bool
	}{
		{nil, die, true},
		{[]filters.KeyValuePair{filters.Arg("container", "web")}, die, true},
		{[]filters.KeyValuePair{filters.Arg("container", "abcdef")}, die, true},
		{[]filters.KeyValuePair{filters.Arg("container", "abc")}, die, true},
		{[]filters.KeyValuePair{filters.Arg("container", "other")}, die, false},
		{[]filters.KeyValuePair{filters.Arg("container", "web")}, vol, false},
		{[]filters.KeyValuePair{filters.Arg("event", "die")}, die, true},
		{[]filters.KeyValuePair{filters.Arg("event", "start")}, die, false},
		{[]filters.KeyValuePair{filters.Arg("event", "exec_start")}, exec, true},
		{[]filters.KeyValuePair{filters.Arg("type", "volume")}, vol, true},
		{[]filters.KeyValuePair{filters.Arg("type", "volume")}, die, false},
		{[]filters.KeyValuePair{filters.Arg("volume", "v1"), filters.Arg("event", "create")}, vol, true},
		{[]filters.KeyValuePair{filters.Arg("label", "app=x")}, die, true},
		{[]filters.KeyValuePair{filters.Arg("label", "app=y")}, die, false},
		{[]filters.KeyValuePair{filters.Arg("image", "busybox")}, die, true},
		{[]filters.KeyValuePair{filters.Arg("image", "busybox")}, img, true},
		{[]filters.KeyValuePair{filters.Arg("image", "alpine")}, img, false},
		{[]filters.KeyValuePair{filters.Arg("image", "busybox")}, vol, false},
		{[]filters.KeyValuePair{filters.Arg("image", "busybox:latest")}, pull, true},
		{[]filters.KeyValuePair{filters.Arg("image", "busybox")}, pull, true},
		{[]filters.KeyValuePair{filters.Arg("image", "sha256:1234")}, img, true},
		{[]filters.KeyValuePair{filters.Arg("network", "front")}, conn, true},
		{[]filters.KeyValuePair{filters.Arg("network", "9f8e")}, conn, true},
		{[]filters.KeyValuePair{filters.Arg("network", "back")}, conn, false},
		{[]filters.KeyValuePair{filters.Arg("network", "front")}, die, false},
		{[]filters.KeyValuePair{filters.Arg("type", "network"), filters.Arg("event", "connect")}, conn, true},
		{[]filters.KeyValuePair{filters.Arg("type", "network"), filters.Arg("event", "disconnect")}, conn, false},
		{[]filters.KeyValuePair{filters.Arg("type", "network"), filters.Arg("type", "container")}, conn, true},
		{[]filters.KeyValuePair{filters.Arg("daemon", "host1")}, reload, true},
		{[]filters.KeyValuePair{filters.Arg("daemon", "host2")}, reload, false},
		{[]filters.KeyValuePair{filters.Arg("daemon", "host1")}, die, false},
		{[]filters.KeyValuePair{filters.Arg("type", "daemon"), filters.Arg("event", "reload")}, reload, true},
		{[]filters.KeyValuePair{filters.Arg("scope", "local")}, reload, true},
		{[]filters.KeyValuePair{filters.Arg("scope", "swarm")}, reload, false},
		{[]filters.KeyValuePair{filters.Arg("label", "debug=true")}, reload, true},
		{[]filters.KeyValuePair{filters.Arg("event", "health_status")}, eventtypes.Message{Type: eventtypes.ContainerEventType, Action: "health_status: healthy", Actor: ctr("abcdef", "web", "busybox", nil)}, true},
	} {
		f := Filter{Args: filters.NewArgs(tc.args...)}
		if got := f.Match(tc.m); got != tc.want {
			t.Errorf("%v on %s %s: %v, want %v", tc.args, tc.m.Type, tc.m.Action, got, tc.want)
		}
	}
}

// A subscriber that never reads costs events, never the publisher.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	e := New()
	subs := make([]*Subscription, 1000)
	for i := range subs {
		_, subs[i] = e.Subscribe(time.Time{}, time.Time{}, Filter{})
	}
	done := make(chan struct{})
	go func() {
		for i := 0; i < subscriberBuffer+100; i++ {
			e.Log(eventtypes.ActionStart, eventtypes.ContainerEventType, ctr("c", "n", "i", nil))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Log blocked on subscribers that do not read")
	}
	if subs[0].Dropped() != 100 {
		t.Fatalf("dropped %d, want 100", subs[0].Dropped())
	}
	for _, s := range subs {
		e.Cancel(s)
	}
	if e.Subscribers() != 0 {
		t.Fatal("subscribers left")
	}
}
