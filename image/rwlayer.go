package image

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// rwLayer is a container's writable layer; it holds references on the
// layers of the image it was created from.
type rwLayer struct {
	ContainerID string          `json:"container_id"`
	ImageID     digest.Digest   `json:"image_id"`
	Chain       []digest.Digest `json:"chain"`
	CacheID     string          `json:"cache_id"`
}

func (s *Store) mountPath(id string) string { return filepath.Join(s.mountDir(), id+".json") }

func (s *Store) loadMounts() {
	ents, err := os.ReadDir(s.mountDir())
	if err != nil {
		slog.Error("image store: cannot list RW layers", "err", err)
		return
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			os.Remove(filepath.Join(s.mountDir(), name))
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.mountDir(), name))
		var rw rwLayer
		if err == nil {
			err = json.Unmarshal(data, &rw)
		}
		if err == nil {
			for _, c := range rw.Chain {
				if s.layers[c] == nil {
					err = fmt.Errorf("image layer %s missing", c)
					break
				}
			}
		}
		if err != nil {
			slog.Error("image store: ignoring broken RW layer record", "file", name, "err", err)
			continue
		}
		for _, c := range rw.Chain {
			s.layers[c].refs++
		}
		s.mounts[rw.ContainerID] = &rw
	}
}

// CreateRWLayer makes the writable layer of a container on top of an image.
func (s *Store) CreateRWLayer(containerID string, imageID digest.Digest) error {
	if containerID == "" || strings.ContainsAny(containerID, "/.") {
		return errdefs.InvalidParameter(fmt.Errorf("invalid container id %q", containerID))
	}
	s.mu.Lock()
	img := s.images[imageID]
	if img == nil {
		s.mu.Unlock()
		return errdefs.NotFound(fmt.Errorf("No such image: %s", imageID))
	}
	if s.mounts[containerID] != nil {
		s.mu.Unlock()
		return errdefs.Conflict(fmt.Errorf("container %s already has a RW layer", containerID))
	}
	rw := &rwLayer{ContainerID: containerID, ImageID: imageID, CacheID: containerID,
		Chain: append([]digest.Digest(nil), img.chain...)}
	parentCache := ""
	if n := len(rw.Chain); n > 0 {
		parentCache = s.layers[rw.Chain[n-1]].CacheID
	}
	for _, c := range rw.Chain {
		s.layers[c].refs++
	}
	s.mounts[containerID] = rw
	s.mu.Unlock()

	err := s.driver.CreateRW(rw.CacheID, parentCache)
	if err == nil {
		crashpoint.Hit("create-layer-before-record")
		var data []byte
		data, err = json.Marshal(rw)
		if err == nil {
			err = atomicfile.Write(s.mountPath(containerID), data, 0o600)
		}
		if err != nil {
			s.driver.Remove(rw.CacheID)
		}
	}
	if err != nil {
		s.mu.Lock()
		delete(s.mounts, containerID)
		s.releaseLayersLocked(rw.Chain)
		s.mu.Unlock()
		return fmt.Errorf("create RW layer: %w", err)
	}
	return nil
}

func (s *Store) rw(containerID string) (*rwLayer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rw := s.mounts[containerID]
	if rw == nil {
		return nil, errdefs.NotFound(fmt.Errorf("no RW layer for container %s", containerID))
	}
	return rw, nil
}

// Mount assembles the container's rootfs and returns its path; mounting
// an already mounted container returns the existing mount.
func (s *Store) Mount(containerID string) (string, error) {
	rw, err := s.rw(containerID)
	if err != nil {
		return "", err
	}
	return s.driver.Mount(rw.CacheID)
}

// Unmount releases the container's rootfs mount.
func (s *Store) Unmount(containerID string) error {
	rw, err := s.rw(containerID)
	if err != nil {
		return err
	}
	return s.driver.Unmount(rw.CacheID)
}

// RemoveRWLayer deletes the container's writable layer; removing one that
// does not exist is not an error, so cleanup can be repeated.
func (s *Store) RemoveRWLayer(containerID string) error {
	s.mu.Lock()
	rw := s.mounts[containerID]
	s.mu.Unlock()
	if rw == nil {
		return nil
	}
	if err := s.driver.Remove(rw.CacheID); err != nil {
		return fmt.Errorf("remove RW layer: %w", err)
	}
	if err := os.Remove(s.mountPath(containerID)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove RW layer: %w", err)
	}
	s.mu.Lock()
	delete(s.mounts, containerID)
	s.releaseLayersLocked(rw.Chain)
	s.mu.Unlock()
	return nil
}
