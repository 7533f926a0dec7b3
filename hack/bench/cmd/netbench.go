package main

import (
	"context"
	"fmt"
	"time"
)

// userNetwork is the user-defined network each engine gets for the
// 100-container figure; its bridge and subnet are the engine's own.
const userNetwork = "sdbench-user"

// benchNet: `run --rm busybox true` on each engine's default bridge, and
// N sequential `run -d … sleep` on one user-defined network of its own.
func benchNet(ctx context.Context, o *options, es []*Engine, rs *Results) {
	rs.define("run_cli_defnet", "run --rm busybox true, default bridge network (CLI)", "ms", "lower",
		"each engine's bridge of its own: ours sdbench-o0 10.215.0.1/24, docker sdbench-d0 10.213.0.1/24 (both without NAT rules: --iptables=false), podman sdbench-p0 10.214.0.0/24 (netavark)")
	for i := 0; i < o.samples && ctx.Err() == nil; i++ {
		for _, e := range es {
			if v, err := e.timed(ctx, args([]string{"run", "--rm"}, e.DefaultNet, []string{busybox, "true"})...); err != nil {
				rs.fail("run_cli_defnet", e.Name, err)
			} else {
				rs.add("run_cli_defnet", e.Name, v)
			}
		}
	}

	n := o.containers
	rs.define("usernet_up", fmt.Sprintf("%d x run -d sleep on one user-defined network (sequential)", n), "s", "lower",
		"`network create` of each engine's own (with its embedded DNS: ours and docker built in, podman aardvark-dns): ours sdbench-ou 10.216.0.0/24, docker sdbench-du 10.217.0.0/24, podman sdbench-pu 10.218.0.0/24")
	rs.define("usernet_down", fmt.Sprintf("stop -t 0 + rm of the %d on the user network", n), "s", "lower", "")
	for _, e := range es {
		if err := createUserNetwork(ctx, e); err != nil {
			rs.fail("usernet_up", e.Name, err)
		}
	}
	for round := 0; round < o.rounds && ctx.Err() == nil; round++ {
		for _, e := range es {
			if _, bad := rs.byKey["usernet_up"].Errors[e.Name]; bad {
				continue
			}
			var ids []string
			var failed error
			t0 := sampleStart(e)
			for i := 0; i < n; i++ {
				id, err := e.run(ctx, "run", "-d", "--network", userNetwork, busybox, "sleep", "1000")
				if err != nil {
					failed = err
					break
				}
				ids = append(ids, id)
			}
			if failed != nil {
				rs.fail("usernet_up", e.Name, failed)
			} else {
				rs.add("usernet_up", e.Name, time.Since(t0).Seconds())
			}
			if len(ids) == 0 {
				continue
			}
			stopAndRemove(ctx, e, rs, "usernet_down", ids, failed == nil)
		}
	}
	for _, e := range es {
		removeUserNetwork(context.Background(), e)
	}
}

// createUserNetwork makes the engine's user network. Podman's is defined
// in its private network directory when its config is written (4.3's
// `network create` cannot name the bridge).
func createUserNetwork(ctx context.Context, e *Engine) error {
	if e.Name == "podman" {
		return nil
	}
	un := userNets[e.Name]
	_, err := e.run(ctx, "network", "create", "--driver", "bridge", "--subnet", un.subnet,
		"-o", "com.docker.network.bridge.name="+un.bridge, userNetwork)
	return err
}

func removeUserNetwork(ctx context.Context, e *Engine) {
	if e.Name == "podman" {
		return // its definition stays until the private dirs go; its bridge goes with its last container
	}
	_, _ = e.run(ctx, "network", "rm", userNetwork)
}
