package image

import (
	"io/fs"
	"path/filepath"

	"github.com/opencontainers/go-digest"
)

// Usage is what `docker system df` and image prune count: each image's
// layers (chain IDs) and each layer's size, one consistent snapshot.
type Usage struct {
	ImageChains map[digest.Digest][]digest.Digest // image ID → its chain IDs, base first
	LayerSize   map[digest.Digest]int64           // chain ID → bytes of file content
}

// Usage returns the store's layers and which images hold them.
func (s *Store) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := Usage{ImageChains: make(map[digest.Digest][]digest.Digest, len(s.images)), LayerSize: make(map[digest.Digest]int64, len(s.layers))}
	for id, img := range s.images {
		u.ImageChains[id] = append([]digest.Digest(nil), img.chain...)
	}
	for c, l := range s.layers {
		u.LayerSize[c] = l.Size
	}
	return u
}

// SharedSize is the size of the image's layers that another image holds
// too (Docker's SharedSize), and TotalLayers the bytes of every layer.
func (u Usage) SharedSize(id digest.Digest) int64 {
	users := map[digest.Digest]int{}
	for _, chain := range u.ImageChains {
		for _, c := range chain {
			users[c]++
		}
	}
	var n int64
	for _, c := range u.ImageChains[id] {
		if users[c] > 1 {
			n += u.LayerSize[c]
		}
	}
	return n
}

// TotalLayers is the bytes of file content of every layer, each once.
func (u Usage) TotalLayers() int64 {
	var n int64
	for _, sz := range u.LayerSize {
		n += sz
	}
	return n
}

// RWLayerSize is the bytes of file content a container wrote (its
// writable layer's diff: overlay2's upper directory), Docker's SizeRw.
func (s *Store) RWLayerSize(containerID string) (int64, error) {
	rw, err := s.rw(containerID)
	if err != nil {
		return 0, err
	}
	var n int64
	err = filepath.WalkDir(s.driver.Diff(rw.CacheID), func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file going away while counted
		}
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}
