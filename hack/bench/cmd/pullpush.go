package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// The pull/push image: 5 random (incompressible, distinct) layers.
const (
	regPullSrc     = "sdbench/pullsrc:latest"
	regPushSrc     = "sdbench/pushsrc:latest"
	regImageLayers = 5
	regSeedBase    = 100 // layers differ from the load figure's
)

// benchPullPush: pull of the 5-layer image from the pull registry (each
// sample starts with the image absent from the engine), and push of the
// same image to a fresh repository of the push registry, whose storage is
// emptied before every push (so every layer is uploaded: none exists
// there, none can be mounted from another repository).
func benchPullPush(ctx context.Context, o *options, es []*Engine, rs *Results) {
	layerBytes := int64(o.regMB) * 1000 * 1000 / regImageLayers
	// Two images of distinct random layers: the one pulled must share
	// nothing with the one every engine holds for the push.
	pullTar, pushTar := filepath.Join(o.base, "pullimage.tar"), filepath.Join(o.base, "pushimage.tar")
	size, err := makeBigImage(pullTar, regPullSrc, regImageLayers, layerBytes, regSeedBase)
	if err == nil {
		_, err = makeBigImage(pushTar, regPushSrc, regImageLayers, layerBytes, 2*regSeedBase)
	}
	defer os.Remove(pullTar)
	defer os.Remove(pushTar)
	if err != nil {
		slog.Error("make registry images", "err", err)
		return
	}
	mb := float64(size) / 1e6
	rs.define("pull", fmt.Sprintf("pull of a %.0f MB image, %d random layers, loopback registry", mb, regImageLayers), "s", "lower",
		"Debian's docker-registry 2.8, plain HTTP on 127.0.0.1 (insecure in each engine's private config); the image absent from the engine before each pull; put in the registry once by Docker's push (gzip layers)")
	rs.define("push", fmt.Sprintf("push of a %.0f MB image (%d random layers) to a fresh repository", mb, regImageLayers), "s", "lower",
		"a new repository name each sample, and the push registry's storage emptied before each push: every layer is compressed and uploaded")
	for _, r := range []*registry{o.regPull, o.regPush} {
		if err := r.start(ctx); err != nil {
			rs.fail("pull", "ours", err)
			return
		}
	}
	pullRef := o.regPull.Addr + "/sdbench/pull:latest"
	if err := seedPullRegistry(ctx, es, pullTar, pullRef); err != nil {
		rs.fail("pull", "ours", err)
		return
	}
	for _, e := range es {
		if _, err := e.run(ctx, "load", "-i", pushTar); err != nil {
			rs.fail("push", e.Name, err)
		}
	}
	defer func() {
		for _, e := range es {
			_, _ = e.run(context.Background(), "rmi", regPushSrc)
		}
	}()
	for i := 0; i < o.regRounds && ctx.Err() == nil; i++ {
		for _, e := range es {
			v, err := e.timed(ctx, "pull", pullRef)
			if err != nil {
				rs.fail("pull", e.Name, err)
			} else {
				rs.add("pull", e.Name, v/1000)
			}
			// Absent again (tag and layers) for the next sample.
			if _, err := e.run(ctx, "rmi", pullRef); err != nil {
				slog.Warn("rmi", "engine", e.Name, "err", err)
			}
		}
		for _, e := range es {
			if err := o.regPush.reset(ctx); err != nil {
				rs.fail("push", e.Name, err)
				continue
			}
			ref := fmt.Sprintf("%s/sdbench/push-%s-%d:latest", o.regPush.Addr, e.Name, i)
			if _, err := e.run(ctx, "tag", regPushSrc, ref); err != nil {
				rs.fail("push", e.Name, err)
				continue
			}
			v, err := e.timed(ctx, "push", ref)
			if err != nil {
				rs.fail("push", e.Name, err)
			} else {
				rs.add("push", e.Name, v/1000)
			}
			_, _ = e.run(ctx, "rmi", ref)
		}
	}
}

// seedPullRegistry puts the pull image in the registry with Docker's
// push (untimed), then removes it from Docker again.
func seedPullRegistry(ctx context.Context, es []*Engine, tar, ref string) error {
	for _, e := range es {
		if e.Name != "docker" {
			continue
		}
		for _, a := range [][]string{{"load", "-i", tar}, {"tag", regPullSrc, ref}, {"push", ref}, {"rmi", regPullSrc, ref}} {
			if _, err := e.run(ctx, a...); err != nil {
				return fmt.Errorf("seeding the pull registry: %w", err)
			}
		}
		return nil
	}
	return fmt.Errorf("seeding the pull registry: no docker engine")
}
