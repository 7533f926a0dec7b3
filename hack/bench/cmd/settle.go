package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// Each timed sample starts only once the host has gone quiet, so that no
// engine pays for work another engine left running after its own command
// returned. Podman's exec is the case that showed it: for 100–150 ms after
// `podman exec` returns, more than one of this machine's two cores stays
// busy with its clean-up, and whichever engine sampled next paid for it
// (our exec: 69 ms alone, 73 ms interleaved with Docker, 87 ms with Podman).
// settleSamples is -settle: whether timed samples wait for a quiet host.
var settleSamples = true

const (
	settleWindow  = 100 * time.Millisecond // how long the host must stay quiet
	settlePoll    = 20 * time.Millisecond
	settleBusy    = 0.10 // quiet: under this share of all CPUs busy over the window
	settleTimeout = 3 * time.Second
)

// sampleStart begins a timed sample of engine e: with -settle (the
// default) it first waits for a quiet host. It returns the start time.
func sampleStart(e *Engine) time.Time {
	if settleSamples && !settle() {
		slog.Warn("host still busy after the settle timeout; sampling anyway", "engine", e.Name)
	}
	return time.Now()
}

// cpuTicks reads the host's busy and total CPU time (in clock ticks) from
// the first line of /proc/stat; idle and iowait count as not busy.
func cpuTicks() (busy, total uint64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// settle waits until the host has been quiet for settleWindow, or
// settleTimeout has passed; it reports whether the host went quiet.
func settle() bool {
	type sample struct {
		at          time.Time
		busy, total uint64
	}
	deadline := time.Now().Add(settleTimeout)
	var hist []sample
	for time.Now().Before(deadline) {
		busy, total, err := cpuTicks()
		if err != nil {
			return false
		}
		now := time.Now()
		hist = append(hist, sample{now, busy, total})
		// The oldest sample at least a window old is the window's start.
		start := -1
		for i := len(hist) - 1; i >= 0; i-- {
			if now.Sub(hist[i].at) >= settleWindow {
				start = i
				break
			}
		}
		if start >= 0 {
			s := hist[start]
			if total > s.total && float64(busy-s.busy)/float64(total-s.total) < settleBusy {
				return true
			}
			hist = hist[start:]
		}
		time.Sleep(settlePoll)
	}
	return false
}
