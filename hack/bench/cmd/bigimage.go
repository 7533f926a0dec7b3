package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// bigImageRef is the tag the load/save benchmark image carries.
const bigImageRef = "sdbench/big:latest"

// chachaReader streams incompressible bytes: a layer of zeros would let
// any engine that compresses or dedups look faster than the disk.
type chachaReader struct{ r *rand.ChaCha8 }

func (c chachaReader) Read(p []byte) (int, error) { return c.r.Read(p) }

// makeBigImage writes a `docker save` archive (manifest.json, config,
// <diffid>/layer.tar) of layers random layers of layerBytes each, tagged
// ref, which Docker, Podman and our engine all load. Layer i's bytes come
// from seed seedBase+i, so images made with other bases share no layer.
// It returns the archive's size.
func makeBigImage(path, ref string, layers int, layerBytes int64, seedBase int) (int64, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), "bigimage-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)

	var diffIDs, layerPaths []string
	var layerFiles []string
	for i := 0; i < layers; i++ {
		lf := filepath.Join(dir, fmt.Sprintf("layer%d.tar", i))
		sum, err := writeLayer(lf, i, seedBase+i, layerBytes)
		if err != nil {
			return 0, err
		}
		diffIDs = append(diffIDs, "sha256:"+sum)
		layerPaths = append(layerPaths, sum+"/layer.tar")
		layerFiles = append(layerFiles, lf)
	}
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC(),
		"config":       map[string]any{"Cmd": []string{"sh"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return 0, err
	}
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config": cfgName, "RepoTags": []string{ref}, "Layers": layerPaths,
	}})
	if err != nil {
		return 0, err
	}

	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for i, lf := range layerFiles {
		if err := tarDir(tw, filepath.Dir(layerPaths[i])); err != nil {
			return 0, err
		}
		if err := tarFile(tw, layerPaths[i], lf, 0o644); err != nil {
			return 0, err
		}
	}
	if err := tarBytes(tw, cfgName, cfg); err != nil {
		return 0, err
	}
	if err := tarBytes(tw, "manifest.json", manifest); err != nil {
		return 0, err
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), f.Close()
}

// writeLayer writes a layer tar holding one random file (file name from n,
// bytes from seed) and returns the tar's sha256 (its diff ID).
func writeLayer(path string, n, seed int, size int64) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(f, h))
	hdr := &tar.Header{Name: fmt.Sprintf("data%d.bin", n), Mode: 0o644, Size: size, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return "", err
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed+1))
	if _, err := io.CopyN(tw, chachaReader{rand.NewChaCha8(key)}, size); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), f.Close()
}

func tarDir(tw *tar.Writer, name string) error {
	return tw.WriteHeader(&tar.Header{Name: name + "/", Mode: 0o755, ModTime: time.Unix(0, 0), Typeflag: tar.TypeDir})
}

// writeTar creates the tar file path and has fill write its entries.
func writeTar(path string, fill func(*tar.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := fill(tw); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// tarBytes writes data as the regular file name.
func tarBytes(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// tarFile writes the file src as the regular file name with mode.
func tarFile(tw *tar.Writer, name, src string, mode int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: st.Size(), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
