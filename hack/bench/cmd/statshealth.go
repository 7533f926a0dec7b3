package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	statsContainers = 50
	// healthContainers probing every second: 20 (issue 13's example)
	// saturate 2 vCPUs at about 80 ms of CPU a probe, and the latency
	// then measures the run queue; 10 stay below.
	healthContainers = 10
)

// startSleepers runs n `sleep` containers (untimed) with extra run flags.
func startSleepers(ctx context.Context, e *Engine, n int, extra ...string) ([]string, error) {
	var ids []string
	for i := 0; i < n; i++ {
		id, err := e.run(ctx, args([]string{"run", "-d"}, netNone, extra, []string{busybox, "sleep", "1000"})...)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// benchStats: one `stats --no-stream` (every running container) with 50
// running, timed.
func benchStats(ctx context.Context, o *options, es []*Engine, rs *Results) {
	rs.define("stats", fmt.Sprintf("stats --no-stream with %d running", statsContainers), "s", "lower",
		"wall time of one CLI call, all running containers (busybox sleep)")
	ids := map[string][]string{}
	for _, e := range es {
		got, err := startSleepers(ctx, e, statsContainers)
		ids[e.Name] = got
		if err != nil {
			rs.fail("stats", e.Name, err)
		}
	}
	defer func() {
		for _, e := range es {
			if len(ids[e.Name]) > 0 {
				_ = e.forceRemove(context.Background(), ids[e.Name]...)
			}
		}
	}()
	for i := 0; i < o.statsRounds && ctx.Err() == nil; i++ {
		for _, e := range es {
			if len(ids[e.Name]) != statsContainers {
				continue
			}
			v, err := timedStats(ctx, e)
			if err != nil {
				rs.fail("stats", e.Name, err)
				continue
			}
			rs.add("stats", e.Name, v)
		}
	}
}

// timedStats times `stats --no-stream` and checks that it listed every
// container.
func timedStats(ctx context.Context, e *Engine) (float64, error) {
	t0 := sampleStart(e)
	out, err := e.run(ctx, "stats", "--no-stream", "--format", "{{.Name}} {{.CPUPerc}} {{.MemUsage}}")
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); n < statsContainers {
		return 0, fmt.Errorf("stats listed %d containers, want %d", n, statsContainers)
	}
	return d.Seconds(), nil
}

// healthLog is what the figure reads of State.Health.
type healthLog struct {
	ID    string `json:"Id"`
	State struct {
		Health *struct {
			Log []struct {
				Start time.Time
				End   time.Time
			}
		}
	}
}

// benchHealth: healthContainers containers with `--health-cmd true
// --health-interval 1s` for a fixed window; the engine's CPU time
// (daemon and helpers with their reaped children, /proc) per probe run,
// and each probe's latency from State.Health.Log (End - Start).
func benchHealth(ctx context.Context, o *options, es []*Engine, rs *Results) {
	window := time.Duration(o.healthSecs) * time.Second
	rs.define("health_cpu", fmt.Sprintf("CPU time per health probe run (%d containers, --health-interval 1s, %s)", healthContainers, window), "ms", "lower",
		"utime+stime of daemon(s) and per-container helpers incl. their reaped children (/proc), over the window, ÷ probes run (each probe appends a line to a file in its container, counted by exec before and after the window); probe `echo >> /probes` (CMD-SHELL: /bin/sh -c, as `true` would be)")
	rs.define("health_cpu_daemon", "… of which the daemon(s)", "ms", "lower", "ours dockerd; docker dockerd + containerd; the rest is the helpers (shims and the processes they reaped)")
	rs.define("health_latency", "health probe latency (State.Health.Log End - Start)", "ms", "lower", "the last 5 results of each container after the window")
	for round := 0; round < o.healthRounds && ctx.Err() == nil; round++ {
		for _, e := range es {
			if e.Name == "podman" {
				if _, err := os.Stat("/run/systemd/system"); err != nil {
					rs.note("health_cpu", e.Name, "Podman runs health checks from systemd transient timers; this host has no systemd (PID 1 is not systemd), so its probes never run")
					rs.note("health_cpu_daemon", e.Name, "no systemd here (see the CPU row)")
					rs.note("health_latency", e.Name, "no systemd here (see the CPU row)")
					continue
				}
			}
			if err := healthRound(ctx, e, window, rs); err != nil {
				rs.fail("health_cpu", e.Name, err)
			}
		}
	}
}

// healthCmd is the probe: Docker runs --health-cmd as CMD-SHELL, so
// `true` would be `/bin/sh -c true`; this is the same shell appending a
// line (a builtin, no further process), which counts the probes that ran
// without reading the engine while its CPU time is measured.
const healthCmd = "echo >> /probes"

func healthRound(ctx context.Context, e *Engine, window time.Duration, rs *Results) error {
	ids, err := startSleepers(ctx, e, healthContainers, "--health-cmd", healthCmd, "--health-interval", "1s")
	defer func() {
		if len(ids) > 0 {
			_ = e.forceRemove(context.Background(), ids...)
		}
	}()
	if err != nil {
		return err
	}
	// Let every monitor settle into its interval.
	time.Sleep(3 * time.Second)
	n0, err := countProbes(ctx, e, ids)
	if err != nil {
		return err
	}
	d0, h0 := e.cpuTimes()
	t0 := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return ctx.Err()
	}
	d1, h1 := e.cpuTimes()
	n1, err := countProbes(ctx, e, ids)
	if err != nil {
		return err
	}
	probes := n1 - n0
	if probes <= 0 {
		return fmt.Errorf("no health probe ran in %s", window)
	}
	daemonCPU, helperCPU := d1-d0, h1-h0
	cpu := daemonCPU + helperCPU
	rs.add("health_cpu", e.Name, ms(cpu)/float64(probes))
	rs.add("health_cpu_daemon", e.Name, ms(daemonCPU)/float64(probes))
	seen := map[string]time.Duration{}
	if err := readHealth(ctx, e, ids, t0, seen); err != nil {
		return err
	}
	for _, l := range seen {
		rs.add("health_latency", e.Name, ms(l))
	}
	slog.Info("health window", "engine", e.Name, "probes", probes, "expected", int(window.Seconds())*healthContainers,
		"cpu", cpu, "daemon_cpu", daemonCPU, "helpers_cpu", helperCPU)
	return nil
}

// countProbes sums the probes' lines in every container (outside the
// measured window: these execs cost the engine CPU too).
func countProbes(ctx context.Context, e *Engine, ids []string) (int, error) {
	total := 0
	for _, id := range ids {
		out, err := e.run(ctx, "exec", id, "sh", "-c", "cat /probes 2>/dev/null | wc -l")
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			return 0, fmt.Errorf("probe count %q: %w", out, err)
		}
		total += n
	}
	return total, nil
}

// readHealth records the probes of the log that started after since.
func readHealth(ctx context.Context, e *Engine, ids []string, since time.Time, seen map[string]time.Duration) error {
	out, err := e.run(ctx, append([]string{"inspect", "--type", "container"}, ids...)...)
	if err != nil {
		return err
	}
	var hs []healthLog
	if err := json.Unmarshal([]byte(out), &hs); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	for _, h := range hs {
		if h.State.Health == nil {
			continue
		}
		for _, l := range h.State.Health.Log {
			if l.Start.Before(since) || l.End.IsZero() {
				continue
			}
			seen[h.ID+"/"+l.Start.String()] = l.End.Sub(l.Start)
		}
	}
	return nil
}

// cpuTimes is the engine's CPU time so far, of its daemon processes and
// of its helpers, each with the children it has reaped (cutime, cstime).
func (e *Engine) cpuTimes() (daemon, helpers time.Duration) {
	ps := listProcs()
	var d, h int64
	for _, pid := range e.daemonPIDs(ps) {
		d += procTicks(pid)
	}
	for _, p := range ps {
		if e.isHelper(p) {
			h += procTicks(p.pid)
		}
	}
	return time.Duration(d) * time.Second / clockTicks, time.Duration(h) * time.Second / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// procTicks is utime+stime+cutime+cstime of /proc/PID/stat.
func procTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return statTicks(string(b))
}

func statTicks(stat string) int64 {
	r := strings.LastIndexByte(stat, ')')
	if r < 0 {
		return 0
	}
	// After the comm: state is field 3; utime..cstime are fields 14-17.
	f := strings.Fields(stat[r+1:])
	if len(f) < 15 {
		return 0
	}
	var t int64
	for _, s := range f[11:15] {
		v, _ := strconv.ParseInt(s, 10, 64)
		t += v
	}
	return t
}
