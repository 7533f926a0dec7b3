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
	parentCache, err := s.parentCacheID(parent)
	if err != nil {
		return nil, err
	}
	x, err := s.extractLayer(ctx, op, parent, parentCache, want, r)
	if err != nil {
		return nil, err
	}
	defer x.discard()
	return s.commitLayer(x)
}

// extracted is a layer applied to its directory but not yet registered:
// commitLayer makes it durable and registers it, discard removes it.
type extracted struct {
	s          *Store
	op         string
	parent     digest.Digest
	chain      digest.Digest
	diffID     digest.Digest
	want       digest.Digest // the diff ID the content must have, if known upfront
	cacheID    string
	size       int64
	tarSize    int64
	rec        *os.File
	gz         *gzip.Writer
	registered bool // by commitLayer: the layer is the store's now
	removed    bool
}

// extractLayer is createLayer's first half: the tar applied on top of
// the layer directory parentCache (parent's, which need not be registered
// yet, only complete).
func (s *Store) extractLayer(ctx context.Context, op string, parent digest.Digest, parentCache string, want digest.Digest, r io.Reader) (*extracted, error) {
	x, err := s.prepareLayer(op, parent, parentCache)
	if err != nil {
		return nil, err
	}
	if err := x.apply(ctx, want, r); err != nil {
		x.discard()
		return nil, err
	}
	return x, nil
}

// prepareLayer makes the directory of a layer on top of the layer
// directory parentCache, and its record file.
func (s *Store) prepareLayer(op string, parent digest.Digest, parentCache string) (*extracted, error) {
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
	x := &extracted{s: s, op: op, parent: parent, cacheID: cacheID}
	// The record waits in the scratch space (same filesystem, renamed
	// into layerdb by the commit): what a crash leaves there is wiped at
	// start, and a pull in progress shows there until it has ended.
	x.rec, err = os.CreateTemp(s.tmpDir(), ".record-*")
	if err != nil {
		x.discard()
		return nil, fmt.Errorf("create layer: %w", err)
	}
	x.gz = gzip.NewWriter(x.rec)
	return x, nil
}

// apply extracts the tar r into the layer's directory; the caller
// discards the layer if it fails.
func (x *extracted) apply(ctx context.Context, want digest.Digest, r io.Reader) error {
	s, op, cacheID := x.s, x.op, x.cacheID
	h := sha256.New()
	var tarSize countWriter
	size, err := archive.Apply(ctx, r, s.driver.Diff(cacheID), archive.ApplyOptions{
		Whiteouts: s.driver.Whiteouts(), Digest: io.MultiWriter(h, &tarSize), Meta: x.gz,
		Check: func(written int64) error {
			if written > 0 {
				crashpoint.Hit(op + "-during-layer-extract")
			}
			return s.checkSpace(s.driver.Diff(cacheID), written)
		}})
	if err != nil {
		return fmt.Errorf("apply layer: %w", err)
	}
	diffID := digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil)))
	if want != "" && diffID != want {
		return errdefs.InvalidParameter(fmt.Errorf("layer digest mismatch: config says %s, content is %s", want, diffID))
	}
	crashpoint.Hit(op + "-after-layer-extract")
	x.diffID, x.chain = diffID, nextChain(x.parent, diffID)
	x.size, x.tarSize = size, tarSize.n
	return nil
}

// independentLayers reports whether a layer's directory is independent
// of its parent's content (overlay2: each holds only its own changes, so
// layers of one image can be extracted at once), or starts as a copy of
// it (vfs: the parent must be complete first).
func (s *Store) independentLayers() bool { return s.driver.Whiteouts() != archive.WhiteoutDelete }

// discard removes what extractLayer made, unless it was registered: the
// directory first, the record file (in the scratch space) last.
func (x *extracted) discard() {
	if !x.registered && !x.removed {
		// cacheID is left as it is: a pull reads it (the parent of the
		// layer it extracts next) while another goroutine commits or
		// discards.
		x.removed = true
		if err := x.s.driver.Remove(x.cacheID); err != nil {
			slog.Error("image store: discard layer", "cache", x.cacheID, "err", err)
		}
	}
	if x.rec != nil {
		x.rec.Close()
		os.Remove(x.rec.Name()) // no-op once renamed into place
		x.rec = nil
	}
}

// commitLayer is createLayer's second half: the layer's content and
// record are flushed to disk, then its metadata written and the layer
// registered (its parent must be by now), the caller receiving a
// reference. The caller still calls discard, which then only closes.
func (s *Store) commitLayer(x *extracted) (*layer, error) {
	if s.acquireLayer(x.chain) {
		// Someone registered the same layer meanwhile; use theirs.
		s.mu.Lock()
		l := s.layers[x.chain]
		s.mu.Unlock()
		return l, nil
	}
	if err := x.gz.Close(); err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	if err := x.rec.Sync(); err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	if err := syncfs(s.driver.Diff(x.cacheID)); err != nil {
		return nil, err
	}
	l := &layer{ChainID: x.chain, DiffID: x.diffID, Parent: x.parent, Size: x.size, TarSize: x.tarSize, CacheID: x.cacheID}
	meta, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if existing := s.layers[x.chain]; existing != nil {
		existing.refs++
		return existing, nil
	}
	if x.parent != "" && s.layers[x.parent] == nil {
		return nil, errdefs.NotFound(fmt.Errorf("parent layer %s not found", x.parent))
	}
	if err := os.Rename(x.rec.Name(), s.layerRecord(x.chain)); err != nil {
		return nil, fmt.Errorf("create layer: %w", err)
	}
	crashpoint.Hit(x.op + "-before-layer-metadata")
	if err := atomicfile.Write(s.layerMeta(x.chain), meta, 0o600); err != nil {
		os.Remove(s.layerRecord(x.chain))
		return nil, fmt.Errorf("create layer: %w", err)
	}
	l.refs = 1
	s.layers[x.chain] = l
	x.registered = true
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

// parentCacheID is the cache ID (graph directory) of the layer parent,
// "" for none; a parent the store does not have is NotFound.
func (s *Store) parentCacheID(parent digest.Digest) (string, error) {
	if parent == "" {
		return "", nil
	}
	s.mu.Lock()
	p := s.layers[parent]
	s.mu.Unlock()
	if p == nil {
		return "", errdefs.NotFound(fmt.Errorf("parent layer %s not found", parent))
	}
	return p.CacheID, nil
}
