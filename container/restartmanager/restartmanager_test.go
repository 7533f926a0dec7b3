package restartmanager

import (
	"errors"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
)

func TestRestarts(t *testing.T) {
	onFailure := func(n int) containertypes.RestartPolicy {
		return containertypes.RestartPolicy{Name: containertypes.RestartPolicyOnFailure, MaximumRetryCount: n}
	}
	for _, tc := range []struct {
		p       containertypes.RestartPolicy
		code    int
		stopped bool
		count   int
		want    bool
	}{
		{containertypes.RestartPolicy{}, 1, false, 0, false},
		{containertypes.RestartPolicy{Name: "no"}, 1, false, 0, false},
		{containertypes.RestartPolicy{Name: "always"}, 0, true, 100, true},
		{containertypes.RestartPolicy{Name: "unless-stopped"}, 0, false, 0, true},
		{containertypes.RestartPolicy{Name: "unless-stopped"}, 1, true, 0, false},
		{onFailure(0), 0, false, 0, false},
		{onFailure(0), 1, false, 1000, true},
		{onFailure(3), 1, false, 2, true},
		{onFailure(3), 1, false, 3, false},
	} {
		if got := Restarts(tc.p, tc.code, tc.stopped, tc.count); got != tc.want {
			t.Errorf("Restarts(%+v, %d, %v, %d) = %v, want %v", tc.p, tc.code, tc.stopped, tc.count, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	m := New(containertypes.RestartPolicy{Name: "always"}, 0)
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	for i, w := range want {
		ok, ch := m.ShouldRestart(1, false, time.Millisecond)
		if !ok {
			t.Fatalf("restart %d refused", i)
		}
		if d := m.Delay(); d != w {
			t.Fatalf("delay %d = %v, want %v", i, d, w)
		}
		// A second exit while one restart is pending is not restarted.
		if ok, _ := m.ShouldRestart(1, false, 0); ok {
			t.Fatal("restart while pending")
		}
		start := time.Now()
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < w-10*time.Millisecond {
			t.Fatalf("restart after %v, want %v", el, w)
		}
	}
	// A long run starts the back-off over.
	if ok, ch := m.ShouldRestart(1, false, 11*time.Second); !ok || m.Delay() != 100*time.Millisecond {
		t.Fatalf("after a long run: %v %v", ok, m.Delay())
	} else {
		<-ch
	}
}

func TestBackoffCap(t *testing.T) {
	m := New(containertypes.RestartPolicy{Name: "always"}, 0)
	m.delay = 50 * time.Second
	ok, _ := m.ShouldRestart(1, false, 0)
	if !ok || m.Delay() != time.Minute {
		t.Fatalf("delay %v, want 1m", m.Delay())
	}
	m.Cancel()
}

func TestCancel(t *testing.T) {
	m := New(containertypes.RestartPolicy{Name: "always"}, 0)
	m.delay = 30 * time.Second
	ok, ch := m.ShouldRestart(0, false, 0)
	if !ok {
		t.Fatal("refused")
	}
	m.Cancel()
	select {
	case err := <-ch:
		if !errors.Is(err, ErrCanceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("cancel did not end the wait")
	}
	if ok, _ := m.ShouldRestart(0, false, 0); ok {
		t.Fatal("restart after cancel")
	}
}
