package health

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
)

func TestResolve(t *testing.T) {
	if _, ok := Resolve(nil); ok {
		t.Fatal("nil config resolved")
	}
	if _, ok := Resolve(&containertypes.HealthConfig{Test: []string{"NONE"}}); ok {
		t.Fatal("NONE resolved")
	}
	c, ok := Resolve(&containertypes.HealthConfig{Test: []string{"CMD-SHELL", "exit 0"}})
	if !ok || strings.Join(c.Cmd, "|") != "/bin/sh|-c|exit 0" || c.Interval != DefaultInterval || c.Timeout != DefaultTimeout || c.Retries != 3 || c.StartInterval != DefaultStartInterval {
		t.Fatalf("defaults: %+v", c)
	}
	c, _ = Resolve(&containertypes.HealthConfig{Test: []string{"CMD", "true", "x"}, Retries: 1, Interval: time.Second})
	if strings.Join(c.Cmd, "|") != "true|x" || c.Retries != 1 || c.Interval != time.Second {
		t.Fatalf("CMD: %+v", c)
	}
}

func TestApply(t *testing.T) {
	start := time.Now()
	cfg := Config{Retries: 2, StartPeriod: time.Minute}
	h := &containertypes.Health{Status: containertypes.Starting}
	fail := func(at time.Duration) *containertypes.HealthcheckResult {
		return &containertypes.HealthcheckResult{Start: start.Add(at), ExitCode: 1}
	}
	// Failures in the start period, before any success, do not count.
	if Apply(h, fail(time.Second), cfg, start) || h.FailingStreak != 0 {
		t.Fatalf("start period failure counted: %+v", h)
	}
	if !Apply(h, &containertypes.HealthcheckResult{Start: start.Add(2 * time.Second)}, cfg, start) || h.Status != containertypes.Healthy {
		t.Fatalf("success: %+v", h)
	}
	// Once healthy, failures count even in the start period.
	Apply(h, fail(3*time.Second), cfg, start)
	if h.FailingStreak != 1 || h.Status != containertypes.Healthy {
		t.Fatalf("one failure: %+v", h)
	}
	if !Apply(h, fail(4*time.Second), cfg, start) || h.Status != containertypes.Unhealthy {
		t.Fatalf("retries reached: %+v", h)
	}
	for i := 0; i < 10; i++ {
		Apply(h, fail(time.Duration(5+i)*time.Second), cfg, start)
	}
	if len(h.Log) != MaxLogEntries {
		t.Fatalf("log kept %d", len(h.Log))
	}
}

type fakeRunner struct {
	mu    sync.Mutex
	codes []int
	block bool
}

func (f *fakeRunner) Run(ctx context.Context, cmd []string, timeout time.Duration, out io.Writer) (int, bool, error) {
	fmt.Fprint(out, "partial output")
	if f.block {
		select {
		case <-ctx.Done():
			return -1, false, ctx.Err()
		case <-time.After(timeout):
			return 137, true, nil
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.codes[0]
	if len(f.codes) > 1 {
		f.codes = f.codes[1:]
	}
	return c, false, nil
}

func TestProbeTimeout(t *testing.T) {
	res := Probe(context.Background(), Config{Timeout: 50 * time.Millisecond}, &fakeRunner{block: true})
	if res.ExitCode != -1 || res.Output != "Health check exceeded timeout (50ms): partial output" {
		t.Fatalf("timeout result: %+v", res)
	}
}

type rec struct {
	mu       sync.Mutex
	h        containertypes.Health
	statuses []containertypes.HealthStatus
}

func (r *rec) Record(res *containertypes.HealthcheckResult) containertypes.HealthStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if Apply(&r.h, res, Config{Retries: 1}, time.Time{}) {
		r.statuses = append(r.statuses, r.h.Status)
	}
	return r.h.Status
}

func TestMonitorTurnsHealthyThenUnhealthy(t *testing.T) {
	r := &rec{h: containertypes.Health{Status: containertypes.Starting}}
	cfg := Config{Cmd: []string{"x"}, Interval: 10 * time.Millisecond, Timeout: time.Second, Retries: 1}
	m := Start(cfg, time.Now(), &fakeRunner{codes: []int{0, 0, 1}}, r)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		n := len(r.statuses)
		r.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.statuses) < 2 || r.statuses[0] != containertypes.Healthy || r.statuses[1] != containertypes.Unhealthy {
		t.Fatalf("statuses %v", r.statuses)
	}
}
