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
// (our exec: 71 ms alone, 73 ms interleaved with Docker, 93 ms with Podman;
// hack/bench/README.md).
const (
	settleWindow  = 100 * time.Millisecond // how long the host must stay quiet
	settleBusy    = 0.10                   // quiet: under this share of all CPUs busy over the window
	settleTimeout = 3 * time.Second
)

// sampleStart begins a timed sample of engine e: with -settle (the
// default) it first waits for a quiet host. It returns the start time.
func sampleStart(e *Engine) time.Time {
	if e.settle && !settle() {
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

// settle waits until the host has been quiet over a whole settleWindow,
// or settleTimeout has passed; it reports whether the host went quiet.
func settle() bool {
	for deadline := time.Now().Add(settleTimeout); time.Now().Before(deadline); {
		busy0, total0, err := cpuTicks()
		if err != nil {
			return false
		}
		time.Sleep(settleWindow)
		busy1, total1, err := cpuTicks()
		if err != nil {
			return false
		}
		if total1 > total0 && float64(busy1-busy0)/float64(total1-total0) < settleBusy {
			return true
		}
	}
	return false
}
