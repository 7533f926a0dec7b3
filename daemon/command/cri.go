package command

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/sdengine/engine/api"
	"github.com/sdengine/engine/cri"
	"github.com/sdengine/engine/cri/cni"
	"github.com/sdengine/engine/cri/stream"
	"github.com/sdengine/engine/daemon"
	"github.com/sdengine/engine/daemon/config"
)

// startCRI serves Kubernetes' CRI on cfg.CRISocket, when it is set, and
// its streaming server (exec, attach, port-forward) on
// cfg.CRIStreamAddress, until ctx ends; errors of the servers after they
// started go to errc. shim is the engine's shim binary, which also serves
// as pods' infra process.
func startCRI(ctx context.Context, cfg *config.Config, d *daemon.Daemon, shim string, errc chan<- error) error {
	if cfg.CRISocket == "" {
		return nil
	}
	info, err := d.SystemInfo(ctx)
	if err != nil {
		return err
	}
	srv, err := cri.New(cri.Config{
		Root:          filepath.Join(cfg.Root, "cri"),
		RunRoot:       filepath.Join(cfg.ExecRoot, "cri"),
		CNI:           cni.Config{ConfDir: cfg.CNIConfDir, BinDirs: cfg.CNIBinDirs, CacheDir: filepath.Join(cfg.Root, "cri", "cni")},
		SystemdCgroup: info.CgroupDriver == "systemd",
		InfraBinary:   shim,
		EngineVersion: api.EngineVersion,
	}, d)
	if err != nil {
		return err
	}
	streams, err := stream.New(cfg.CRIStreamAddress, d, srv.NetNS)
	if err != nil {
		return err
	}
	srv.SetStreamer(streams)
	// Only root may use it: whoever talks CRI runs pods as root.
	l, err := listenUnix(cfg.CRISocket, "root")
	if err != nil {
		streams.Close()
		return fmt.Errorf("CRI socket: %w", err)
	}
	slog.Info("CRI listening", "socket", cfg.CRISocket, "streaming", streams.Addr().String())
	go func() { errc <- srv.Serve(ctx, l) }()
	go func() {
		if err := streams.Serve(ctx); err != nil {
			errc <- err
		}
	}()
	return nil
}
