package container

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Each read takes as long as the daemon's second sample; 50 of them must
// overlap (about one read's time, not fifty), and the rows keep the
// arguments' order.
func TestStatsRowsConcurrentInOrder(t *testing.T) {
	const n = 50
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
	}
	var peak, running atomic.Int32
	get := func(ctx context.Context, name string) (*container.StatsResponse, error) {
		now := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		time.Sleep(100 * time.Millisecond)
		return &container.StatsResponse{ID: name + "-id", Name: "/" + name}, nil
	}
	t0 := time.Now()
	rows, err := statsRows(context.Background(), names, get)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("50 reads of 100 ms took %s: not concurrent", d)
	}
	if p := peak.Load(); p < 2 || p > maxParallel {
		t.Fatalf("peak concurrency %d", p)
	}
	for i, r := range rows {
		if got := r.(statsRow).Name; got != names[i] {
			t.Fatalf("row %d is %s, want %s", i, got, names[i])
		}
	}
}

func TestStatsRowsFirstError(t *testing.T) {
	errB := errors.New("no such container: b")
	get := func(ctx context.Context, name string) (*container.StatsResponse, error) {
		switch name {
		case "b":
			return nil, errB
		case "c":
			return nil, errors.New("no such container: c")
		}
		return &container.StatsResponse{}, nil
	}
	if _, err := statsRows(context.Background(), []string{"a", "b", "c"}, get); !errors.Is(err, errB) {
		t.Fatalf("err = %v, want the first in argument order", err)
	}
}
