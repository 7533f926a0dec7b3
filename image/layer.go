package image

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// layer is one applied layer tar. Images (and container RW layers) hold
// a reference on every layer of their chain; at zero it is deleted.
type layer struct {
	ChainID digest.Digest `json:"chain_id"`
	DiffID  digest.Digest `json:"diff_id"`
	Parent  digest.Digest `json:"parent,omitempty"`
	Size    int64         `json:"size"`     // bytes of file content
	TarSize int64         `json:"tar_size"` // bytes of the uncompressed tar
	CacheID string        `json:"cache_id"` // graph driver id
	refs    int
}

// chainIDs computes the OCI chain IDs for a list of diff IDs:
// chain(L0) = diff(L0), chain(Ln) = sha256(chain(Ln-1) + " " + diff(Ln)).
func chainIDs(diffIDs []digest.Digest) ([]digest.Digest, error) {
	out := make([]digest.Digest, 0, len(diffIDs))
	var prev digest.Digest
	for _, d := range diffIDs {
		if err := d.Validate(); err != nil || d.Algorithm() != digest.SHA256 {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid diff ID %q", d))
		}
		prev = nextChain(prev, d)
		out = append(out, prev)
	}
	return out, nil
}

func nextChain(parent, diffID digest.Digest) digest.Digest {
	if parent == "" {
		return diffID
	}
	return digest.FromString(parent.String() + " " + diffID.String())
}

func (s *Store) layerMeta(chain digest.Digest) string {
	return filepath.Join(s.layerDir(), chain.Encoded()+".json")
}

func (s *Store) layerRecord(chain digest.Digest) string {
	return filepath.Join(s.layerDir(), chain.Encoded()+".tar.gz")
}

func (s *Store) loadLayers(rec *recovery) {
	ents, err := os.ReadDir(s.layerDir())
	if err != nil {
		slog.Error("image store: cannot list layers", "err", err)
		rec.unsure = true
		return
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(s.layerDir(), name)
		if strings.HasPrefix(name, ".") {
			os.Remove(p) // torn temp file or unfinished replay record
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			slog.Error("image store: cannot read layer metadata", "file", name, "err", err)
			rec.unsure = true
			continue
		}
		var l layer
		err = json.Unmarshal(data, &l)
		if err == nil && (l.ChainID.Encoded()+".json" != name || l.CacheID == "") {
			err = fmt.Errorf("metadata does not match its name")
		}
		if err != nil {
			rec.removeFile(p, "broken layer metadata", "file", name, "err", err)
			continue
		}
		if _, err := os.Stat(s.driver.Diff(l.CacheID)); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				slog.Error("image store: cannot check layer data", "chain", l.ChainID, "err", err)
				rec.unsure = true
				continue
			}
			rec.removeFile(p, "layer data missing", "chain", l.ChainID, "cache", l.CacheID)
			continue
		}
		s.layers[l.ChainID] = &l
	}
	// A layer whose parent is gone is unusable: it goes too, unless some
	// metadata could not be read (its parent may be among it).
	for changed := true; changed; {
		changed = false
		for id, l := range s.layers {
			if l.Parent != "" && s.layers[l.Parent] == nil {
				delete(s.layers, id)
				changed = true
				if rec.unsure {
					slog.Error("image store: ignoring layer without parent", "chain", id)
					continue
				}
				rec.removeFile(s.layerMeta(id), "layer without parent", "chain", id)
			}
		}
	}
}

// acquireLayer takes a reference on an existing layer, reporting whether
// it exists.
func (s *Store) acquireLayer(chain digest.Digest) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.layers[chain]; l != nil {
		l.refs++
		return true
	}
	return false
}

// releaseLayers drops one reference from each layer and deletes those
// left unused, returning their chain IDs.
func (s *Store) releaseLayers(chains []digest.Digest) []digest.Digest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releaseLayersLocked(chains)
}

func (s *Store) releaseLayersLocked(chains []digest.Digest) []digest.Digest {
	var removed []digest.Digest
	// Top first, so a crash midway never leaves a child without parent.
	for i := len(chains) - 1; i >= 0; i-- {
		l := s.layers[chains[i]]
		if l == nil {
			continue
		}
		if l.refs--; l.refs <= 0 {
			s.removeLayerLocked(l)
			removed = append(removed, l.ChainID)
		}
	}
	return removed
}

// removeLayerLocked deletes a layer: metadata first, so that a crash
// leaves only data that nothing names, which the next open removes.
func (s *Store) removeLayerLocked(l *layer) {
	delete(s.layers, l.ChainID)
	os.Remove(s.pulledMarker(l.ChainID))
	if err := os.Remove(s.layerMeta(l.ChainID)); err != nil && !os.IsNotExist(err) {
		slog.Error("image store: remove layer metadata", "chain", l.ChainID, "err", err)
	}
	crashpoint.Hit("remove-layer-after-metadata")
	os.Remove(s.layerRecord(l.ChainID))
	if err := s.driver.Remove(l.CacheID); err != nil {
		slog.Error("image store: remove layer data", "chain", l.ChainID, "err", err)
	}
}

func randomID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// createLayer applies the tar r on top of parent (a chain ID held by the
// caller, or "") and registers it. The caller receives a reference on the
// returned layer. With want set, a different diff ID is an
// InvalidParameter error and nothing is kept. The extraction stops at the
// reserve of free space (SetMinFreeSpace), checked before it starts and
// every few megabytes. op ("load", "import") names the crash points on
// the way.
func (s *Store) createLayer(ctx context.Context, op string, parent, want digest.Digest, r io.Reader) (*layer, error) {
	parentCache := ""
	if parent != "" {
		s.mu.Lock()
		p := s.layers[parent]
		s.mu.Unlock()
		if p == nil {
			return nil, errdefs.NotFound(fmt.Errorf("parent layer %s not found", parent))
		}
		parentCache = p.CacheID
	}
	// Below the reserve already: refuse before making anything.
	if err := s.checkSpace(s.layerDir(), 0); err != nil {
		return nil, err
	}
	cacheID, err := randomID()
	if err != nil {
		return nil, err
	}
	if err := s.driver.Create(cacheID, parentCache); err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			if err := s.driver.Remove(cacheID); err != nil {
				slog.Error("image store: discard layer", "cache", cacheID, "err", err)
			}
		}
	}()
	rec, err := os.CreateTemp(s.layerDir(), ".record-*")
	if err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	defer func() {
		rec.Close()
		os.Remove(rec.Name()) // no-op once renamed into place
	}()
	gz := gzip.NewWriter(rec)
	h := sha256.New()
	var tarSize countWriter
	size, err := archive.Apply(ctx, r, s.driver.Diff(cacheID), archive.ApplyOptions{
		Whiteouts: s.driver.Whiteouts(), Digest: io.MultiWriter(h, &tarSize), Meta: gz,
		Check: func(written int64) error {
			if written > 0 {
				crashpoint.Hit(op + "-during-layer-extract")
			}
			return s.checkSpace(s.driver.Diff(cacheID), written)
		}})
	if err != nil {
		return nil, fmt.Errorf("apply layer: %w", err)
	}
	diffID := digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil)))
	if want != "" && diffID != want {
		return nil, errdefs.InvalidParameter(fmt.Errorf("layer digest mismatch: config says %s, content is %s", want, diffID))
	}
	crashpoint.Hit(op + "-after-layer-extract")
	chain := nextChain(parent, diffID)

	if s.acquireLayer(chain) {
		// Someone registered the same layer meanwhile; use theirs.
		s.mu.Lock()
		l := s.layers[chain]
		s.mu.Unlock()
		return l, nil
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	if err := rec.Sync(); err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	if err := syncfs(s.driver.Diff(cacheID)); err != nil {
		return nil, err
	}
	l := &layer{ChainID: chain, DiffID: diffID, Parent: parent, Size: size, TarSize: tarSize.n, CacheID: cacheID}
	meta, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if existing := s.layers[chain]; existing != nil {
		existing.refs++
		return existing, nil
	}
	if err := os.Rename(rec.Name(), s.layerRecord(chain)); err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	crashpoint.Hit(op + "-before-layer-metadata")
	if err := atomicfile.Write(s.layerMeta(chain), meta, 0o600); err != nil {
		os.Remove(s.layerRecord(chain))
		return nil, fmt.Errorf("create layer: %w", err)
	}
	l.refs = 1
	s.layers[chain] = l
	keep = true
	return l, nil
}

// syncfs flushes the layer's filesystem so its metadata is never
// committed ahead of its content.
func syncfs(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sync layer: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("sync layer: %w", err)
	}
	return nil
}
