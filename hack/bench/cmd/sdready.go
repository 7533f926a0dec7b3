package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// benchSystemdReady: boot-to-READY beside boot-to-running for the systemd
// image, ours only. "running" is `run -d` returning (the container's
// process runs); "READY=1" is the container's systemd telling the engine
// its boot is done through /run/host/notify, seen as State.Health.Status
// = healthy (docs/systemd.md, "Readiness"). Podman's readiness is its
// CLI's --sdnotify to a systemd unit, with nothing an API client can poll:
// not measured.
func benchSystemdReady(ctx context.Context, o *options, es []*Engine, rs *Results) {
	rs.define("systemd_running", "systemd image: run -d to running", "s", "lower", "ours --init=systemd")
	rs.define("systemd_ready", "systemd image: run -d to READY=1 (healthy)", "s", "lower",
		"ours: systemd's READY=1 on the engine's notify socket makes the container healthy; peers have no such state")
	for round := 0; round < o.bootRounds; round++ {
		for _, e := range es {
			if e.Name != "ours" {
				rs.note("systemd_ready", e.Name, "no readiness from the container")
				continue
			}
			running, ready, err := bootToReady(ctx, e)
			if err != nil {
				rs.fail("systemd_ready", e.Name, err)
				continue
			}
			slog.Info("systemd ready", "engine", e.Name, "running_s", running, "ready_s", ready)
			rs.add("systemd_running", e.Name, running)
			rs.add("systemd_ready", e.Name, ready)
		}
	}
}

func bootToReady(ctx context.Context, e *Engine) (running, ready float64, err error) {
	t0 := sampleStart(e)
	id, err := e.run(ctx, args([]string{"run", "-d", "--init=systemd"}, netNone, []string{systemdRef})...)
	if err != nil {
		return 0, 0, err
	}
	running = time.Since(t0).Seconds()
	defer func() { _ = e.forceRemove(context.Background(), id) }()
	deadline := t0.Add(90 * time.Second)
	health := ""
	for time.Now().Before(deadline) {
		out, _ := e.run(ctx, "inspect", "--format", "{{if .State.Health}}{{.State.Health.Status}}{{end}}", id)
		if health = strings.TrimSpace(out); health == "healthy" {
			return running, time.Since(t0).Seconds(), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, 0, fmt.Errorf("no READY=1 after 90s (health %q)", health)
}
