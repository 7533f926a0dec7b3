package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
)

const buildRef = "sdbench/build:latest"

// buildArgs is the build command of each engine for the fixed Dockerfile
// (hack/bench/build): quiet, and RUN without a network (the same for all
// three, and no engine has to make a bridge or a network namespace of its
// host's for a build step).
func buildArgs(o *options, noCache bool) []string {
	a := []string{"build", "-q", "--network", "none", "-t", buildRef}
	if noCache {
		a = append(a, "--no-cache")
	}
	return append(a, filepath.Join(o.repo, "hack", "bench", "build"))
}

// benchBuild: the fixed 10-instruction Dockerfile built cold (--no-cache)
// and cached (an unchanged rebuild). Docker uses its classic builder
// (DOCKER_BUILDKIT=0 in its environment), Podman `podman build` (buildah,
// with its layer cache).
func benchBuild(ctx context.Context, o *options, es []*Engine, rs *Results) {
	rs.define("build_cold", "build of a fixed 10-instruction Dockerfile, --no-cache", "s", "lower",
		"hack/bench/build/Dockerfile FROM the bench's busybox (RUN, COPY, ADD, ENV, WORKDIR, LABEL, EXPOSE, CMD), --network none; docker: classic builder (DOCKER_BUILDKIT=0); podman: podman build")
	rs.define("build_cached", "rebuild of the same Dockerfile, unchanged (cache)", "s", "lower", "after one untimed build with the cache")
	for i := 0; i < o.buildRounds && ctx.Err() == nil; i++ {
		for _, e := range es {
			v, err := e.timed(ctx, buildArgs(o, true)...)
			if err != nil {
				rs.fail("build_cold", e.Name, err)
				continue
			}
			rs.add("build_cold", e.Name, v/1000)
		}
	}
	for _, e := range es {
		// The cache an unchanged rebuild finds.
		if _, err := e.run(ctx, buildArgs(o, false)...); err != nil {
			rs.fail("build_cached", e.Name, err)
		}
	}
	for i := 0; i < o.buildRounds && ctx.Err() == nil; i++ {
		for _, e := range es {
			v, err := e.timed(ctx, buildArgs(o, false)...)
			if err != nil {
				rs.fail("build_cached", e.Name, err)
				continue
			}
			rs.add("build_cached", e.Name, v/1000)
		}
	}
	for _, e := range es {
		if _, err := e.run(context.Background(), "rmi", buildRef); err != nil {
			slog.Warn("rmi", "engine", e.Name, "ref", buildRef, "err", err)
		}
	}
}

// buildInstructions counts the Dockerfile's instructions (for the test
// that keeps it at ten).
func buildInstructions(dockerfile string) int {
	n := 0
	for _, l := range strings.Split(dockerfile, "\n") {
		if l != "" && l[0] >= 'A' && l[0] <= 'Z' {
			n++
		}
	}
	return n
}
