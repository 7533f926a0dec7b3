package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/image/graphdriver"
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
	removing    bool
}

func (s *Store) mountPath(id string) string { return filepath.Join(s.mountDir(), id+".json") }

// loadMounts loads the containers' RW layer records. A record whose image
// layers are gone, or that cannot be parsed, still names its container's
// layer directory: it is kept (the container cannot be mounted, but can be
// removed) rather than have the container's data collected as an orphan.
func (s *Store) loadMounts(rec *recovery) {
	ents, err := os.ReadDir(s.mountDir())
	if err != nil {
		slog.Error("image store: cannot list RW layers", "err", err)
		rec.unsure = true
		return
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			os.Remove(filepath.Join(s.mountDir(), name))
			continue
		}
		id, ok := strings.CutSuffix(name, ".json")
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.mountDir(), name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			slog.Error("image store: cannot read RW layer record", "file", name, "err", err)
			rec.unsure = true
			continue
		}
		var rw rwLayer
		if err == nil {
			err = json.Unmarshal(data, &rw)
		}
		if err == nil && rw.ContainerID != id {
			err = fmt.Errorf("record names container %q", rw.ContainerID)
		}
		if err != nil {
			slog.Error("image store: broken RW layer record; the container's layer is kept but cannot be mounted", "container", id, "err", err)
			rw = rwLayer{ContainerID: id, CacheID: id}
		}
		var held []digest.Digest
		for _, c := range rw.Chain {
			if s.layers[c] == nil {
				slog.Error("image store: a container's image layer is missing; its layer is kept but cannot be mounted", "container", id, "chain", c)
				continue
			}
			held = append(held, c)
		}
		for _, c := range held {
			s.layers[c].refs++
		}
		rw.Chain = held
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
// does not exist is not an error, so cleanup can be repeated. The record
// goes first (the commit): a crash then leaves a directory that nothing
// names, which the next open removes.
func (s *Store) RemoveRWLayer(containerID string) error {
	s.mu.Lock()
	rw := s.mounts[containerID]
	if rw == nil || rw.removing {
		s.mu.Unlock()
		return nil
	}
	rw.removing = true
	s.mu.Unlock()
	undo := func(err error) error {
		s.mu.Lock()
		rw.removing = false
		s.mu.Unlock()
		return fmt.Errorf("remove RW layer: %w", err)
	}
	if err := s.driver.Unmount(rw.CacheID); err != nil {
		return undo(err)
	}
	if err := os.Remove(s.mountPath(containerID)); err != nil && !os.IsNotExist(err) {
		return undo(err)
	}
	s.mu.Lock()
	delete(s.mounts, containerID)
	s.releaseLayersLocked(rw.Chain)
	s.mu.Unlock()
	if err := s.driver.Remove(rw.CacheID); err != nil {
		slog.Error("image store: remove RW layer data; the next start removes it", "container", containerID, "err", err)
	}
	return nil
}

// RWLayerData is what `docker inspect` shows of a container's layer
// (GraphDriver.Data: LowerDir, UpperDir, WorkDir, MergedDir for
// overlay2); empty where the driver has nothing to say.
func (s *Store) RWLayerData(containerID string) map[string]string {
	md, ok := s.driver.(graphdriver.MetadataDriver)
	if !ok {
		return map[string]string{}
	}
	rw, err := s.rw(containerID)
	if err != nil {
		return map[string]string{}
	}
	data, err := md.Metadata(rw.CacheID)
	if err != nil {
		return map[string]string{}
	}
	return data
}
