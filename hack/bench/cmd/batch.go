package main

import (
	"context"
	"fmt"
	"time"
)

// batchContainers is how many containers one batch command names: the
// figure issue 15 compares (`docker stop -t 1` of 50 in one call).
const batchContainers = 50

// benchBatch: one CLI call over 50 running containers, as a user stops,
// restarts or removes a group: `stop -t 1` (busybox's sleep as PID 1
// ignores SIGTERM, so every stop runs to its SIGKILL after a second: a CLI
// or daemon that serialises them takes about 50 s), `start` of the 50
// stopped, then `rm -f` of the 50 running. Setting up (sequential `run -d`)
// is not timed.
func benchBatch(ctx context.Context, o *options, es []*Engine, rs *Results) {
	n := batchContainers
	rs.define("batch_stop", fmt.Sprintf("stop -t 1 of %d in one call", n), "s", "lower",
		"running busybox sleep (ignores SIGTERM): each stop ends with SIGKILL after 1 s")
	rs.define("batch_start", fmt.Sprintf("start of %d in one call", n), "s", "lower",
		"the stopped containers of the row above; Docker's CLI starts them one after another")
	rs.define("batch_rm", fmt.Sprintf("rm -f of %d in one call", n), "s", "lower",
		"running containers; podman with -t 0 (its rm -f otherwise waits 10 s for SIGTERM)")
	for round := 0; round < o.rounds; round++ {
		for _, e := range es {
			if ctx.Err() != nil {
				return
			}
			batchRound(ctx, e, n, rs)
		}
	}
}

func batchRound(ctx context.Context, e *Engine, n int, rs *Results) {
	var ids []string
	defer func() {
		if len(ids) > 0 {
			_ = e.forceRemove(context.Background(), ids...)
		}
	}()
	for i := 0; i < n; i++ {
		id, err := e.run(ctx, args([]string{"run", "-d"}, netNone, []string{busybox, "sleep", "1000"})...)
		if err != nil {
			rs.fail("batch_stop", e.Name, err)
			return
		}
		ids = append(ids, id)
	}
	timedBatch := func(key string, cmd ...string) bool {
		t0 := sampleStart(e)
		if _, err := e.run(ctx, append(cmd, ids...)...); err != nil {
			rs.fail(key, e.Name, err)
			return false
		}
		rs.add(key, e.Name, time.Since(t0).Seconds())
		return true
	}
	if !timedBatch("batch_stop", "stop", "-t", "1") {
		return
	}
	if !timedBatch("batch_start", "start") {
		return
	}
	rm := []string{"rm", "-f"}
	if e.Name == "podman" {
		rm = append(rm, "-t", "0")
	}
	if timedBatch("batch_rm", rm...) {
		ids = nil
	}
}
