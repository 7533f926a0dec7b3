package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// writeImageArchive writes a one-layer `docker save` archive (which
// `ctr images import` and `docker load` both read) tagged ref, whose layer
// is the tar file layerTar and whose config says entrypoint/cmd.
func writeImageArchive(path, ref, layerTar string, entrypoint, cmd []string) error {
	sum, err := fileSHA256(layerTar)
	if err != nil {
		return err
	}
	imgCfg := map[string]any{}
	if entrypoint != nil {
		imgCfg["Entrypoint"] = entrypoint
	}
	if cmd != nil {
		imgCfg["Cmd"] = cmd
	}
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC(),
		"config":       imgCfg,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + sum}},
	})
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	layerPath := sum + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": []string{layerPath}}})
	if err != nil {
		return err
	}
	return writeTar(path, func(tw *tar.Writer) error {
		if err := tarDir(tw, sum); err != nil {
			return err
		}
		if err := tarFile(tw, layerPath, layerTar, 0o644); err != nil {
			return err
		}
		if err := tarBytes(tw, cfgName, cfg); err != nil {
			return err
		}
		return tarBytes(tw, "manifest.json", manifest)
	})
}

// writePauseLayer writes a layer tar holding the static pause binary as
// /pause, the sandbox image's entrypoint.
func writePauseLayer(path, pauseBin string) error {
	err := writeTar(path, func(tw *tar.Writer) error {
		return tarFile(tw, "pause", pauseBin, 0o755)
	})
	if err != nil {
		return fmt.Errorf("pause layer: %w", err)
	}
	return nil
}

// makePauseImage writes the sandbox image archive for containerd into dir.
func makePauseImage(dir, pauseBin string) (string, error) {
	layer := filepath.Join(dir, "pause-layer.tar")
	if err := writePauseLayer(layer, pauseBin); err != nil {
		return "", err
	}
	defer os.Remove(layer)
	out := filepath.Join(dir, "pause-image.tar")
	return out, writeImageArchive(out, pauseImageRef, layer, []string{"/pause"}, nil)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
