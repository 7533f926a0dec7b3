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
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := tarDir(tw, sum); err != nil {
		return err
	}
	if err := tarFile(tw, layerPath, layerTar); err != nil {
		return err
	}
	for _, m := range []struct {
		name string
		data []byte
	}{{cfgName, cfg}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(m.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// writePauseLayer writes a layer tar holding the static pause binary as
// /pause, the sandbox image's entrypoint.
func writePauseLayer(path, pauseBin string) error {
	src, err := os.Open(pauseBin)
	if err != nil {
		return fmt.Errorf("pause binary: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: st.Size(), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, src); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
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
