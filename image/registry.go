package image

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// What the registry code (distribution/) needs of the store: layers
// applied one at a time under references the caller holds, images
// registered as a load registers them, and two pieces of registry
// metadata kept in distribution.json:
//
//   - repo digests ("localhost:5000/busybox@sha256:..." -> image ID), what
//     inspect shows as RepoDigests and what `name@digest` resolves;
//   - blob refs (diff ID -> the compressed blobs known to hold that layer
//     and the repositories they were seen in), so that a push skips or
//     mounts a blob the registry already has instead of uploading it.
//
// The file is written after the image config it refers to: a crash
// before it loses only that metadata, never an image.

// BlobRef is a compressed blob that holds a layer, and a repository
// ("localhost:5000/busybox", "docker.io/library/busybox") it is in.
type BlobRef struct {
	Digest digest.Digest `json:"digest"`
	Repo   string        `json:"repo"`
	// MediaType is the blob's, as the manifest it came from named it.
	MediaType string `json:"mediaType,omitempty"`
}

// maxBlobRefs bounds what is remembered per layer (the newest win).
const maxBlobRefs = 16

type distMeta struct {
	mu          sync.Mutex
	path        string
	RepoDigests map[string]digest.Digest    `json:"repoDigests"`
	Blobs       map[digest.Digest][]BlobRef `json:"blobs"`
}

func (s *Store) dist() *distMeta {
	s.distOnce.Do(func() {
		m := &distMeta{path: filepath.Join(s.root, "distribution.json"),
			RepoDigests: map[string]digest.Digest{}, Blobs: map[digest.Digest][]BlobRef{}}
		if data, err := os.ReadFile(m.path); err == nil {
			if err := json.Unmarshal(data, m); err != nil {
				slog.Warn("image store: distribution.json is unreadable; repo digests are forgotten", "err", err)
			}
			if m.RepoDigests == nil {
				m.RepoDigests = map[string]digest.Digest{}
			}
			if m.Blobs == nil {
				m.Blobs = map[digest.Digest][]BlobRef{}
			}
		}
		s.distMeta = m
	})
	return s.distMeta
}

// saveLocked writes distribution.json; m.mu must be held.
func (m *distMeta) saveLocked() error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(m.path, data, 0o600); err != nil {
		return fmt.Errorf("save distribution.json: %w", err)
	}
	return nil
}

// repoDigestsLocked lists the repo digests of an image; s.mu is held.
func (s *Store) repoDigestsLocked(id digest.Digest) []string {
	m := s.dist()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []string{}
	for ref, img := range m.RepoDigests {
		if img == id {
			out = append(out, ref)
		}
	}
	sort.Strings(out)
	return out
}

// resolveRepoDigestLocked finds the image a "name@sha256:..." names.
func (s *Store) resolveRepoDigestLocked(ref string) *image {
	if !strings.Contains(ref, "@") {
		return nil
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil
	}
	if _, ok := named.(reference.Digested); !ok {
		return nil
	}
	m := s.dist()
	m.mu.Lock()
	id, ok := m.RepoDigests[reference.FamiliarString(named)]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return s.images[id]
}

// forgetImageLocked drops the repo digests of a removed image.
func (s *Store) forgetImageLocked(id digest.Digest) {
	m := s.dist()
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for ref, img := range m.RepoDigests {
		if img == id {
			delete(m.RepoDigests, ref)
			changed = true
		}
	}
	if changed {
		if err := m.saveLocked(); err != nil {
			slog.Warn("image store: repo digests of a removed image stay on disk until the next save", "id", id, "err", err)
		}
	}
}

// AddRepoDigest records that ref ("name@sha256:...", any form) is the
// image id, replacing what the same name and digest named before.
func (s *Store) AddRepoDigest(id digest.Digest, ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid reference %q: %w", ref, err))
	}
	if _, ok := named.(reference.Digested); !ok {
		return errdefs.InvalidParameter(fmt.Errorf("%q is not a digest reference", ref))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.images[id] == nil {
		return errdefs.NotFound(fmt.Errorf("No such image: %s", id))
	}
	m := s.dist()
	m.mu.Lock()
	defer m.mu.Unlock()
	key := reference.FamiliarString(named)
	if m.RepoDigests[key] == id {
		return nil
	}
	m.RepoDigests[key] = id
	// Images gone since the last save (removed by another path) go too.
	for k, v := range m.RepoDigests {
		if s.images[v] == nil {
			delete(m.RepoDigests, k)
		}
	}
	return m.saveLocked()
}

// BlobRefs returns the blobs known to hold the layer diffID, newest first.
func (s *Store) BlobRefs(diffID digest.Digest) []BlobRef {
	m := s.dist()
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]BlobRef(nil), m.Blobs[diffID]...)
}

// AddBlobRef remembers that blob ref holds the layer diffID.
func (s *Store) AddBlobRef(diffID digest.Digest, ref BlobRef) error {
	m := s.dist()
	m.mu.Lock()
	defer m.mu.Unlock()
	refs := []BlobRef{ref}
	for _, r := range m.Blobs[diffID] {
		if r != ref && len(refs) < maxBlobRefs {
			refs = append(refs, r)
		}
	}
	m.Blobs[diffID] = refs
	return m.saveLocked()
}

// AcquireLayer takes a reference on the layer with this chain ID if the
// store has it, reporting whether it does. ReleaseLayers gives it back.
func (s *Store) AcquireLayer(chain digest.Digest) bool { return s.acquireLayer(chain) }

// ReleaseLayers drops references taken by AcquireLayer or ApplyLayer.
func (s *Store) ReleaseLayers(chains []digest.Digest) { s.releaseLayers(chains) }

// ReleaseLayersKeepPulled is ReleaseLayers for a pull cut short (its
// client gone): a layer left unused whose extraction completed (marked
// by ApplyLayer) stays, unheld, for the next pull to find, as it does
// after a daemon killed mid-pull; image prune removes it if no pull does.
func (s *Store) ReleaseLayersKeepPulled(chains []digest.Digest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(chains) - 1; i >= 0; i-- {
		l := s.layers[chains[i]]
		if l == nil {
			continue
		}
		if l.refs--; l.refs <= 0 {
			l.refs = 0
			if fileExists(s.pulledMarker(l.ChainID)) {
				slog.Info("image store: keeping a layer a cancelled pull completed, for the next pull", "chain", l.ChainID)
				continue
			}
			s.removeLayerLocked(l)
		}
	}
}

// ApplyLayer extracts the layer tar r (compressed or not) on top of the
// layer parent (a chain ID the caller holds, or "") and registers it,
// the caller receiving a reference on it. Content that does not hash to
// diffID is refused and leaves nothing behind; an error from r (a blob
// that failed its digest check) does too. It returns the chain ID.
func (s *Store) ApplyLayer(ctx context.Context, parent, diffID digest.Digest, r io.Reader) (digest.Digest, error) {
	p, err := s.ExtractLayer(ctx, parent, nil, diffID, r)
	if err != nil {
		return "", err
	}
	defer p.Discard()
	return s.CommitLayer(p)
}

// PendingLayer is a pulled layer extracted to its directory but not yet
// registered. A pull extracts the next layer on top of it while it is
// made durable (CommitLayer), so flushing one layer to disk overlaps
// extracting the next instead of stalling it.
type PendingLayer struct{ x *extracted }

// ChainID is the layer's chain ID.
func (p *PendingLayer) ChainID() digest.Digest { return p.x.chain }

// Discard removes the layer unless CommitLayer registered it.
func (p *PendingLayer) Discard() { p.x.discard() }

// Registered reports whether CommitLayer registered this very layer;
// false after a successful CommitLayer means the store had the same
// layer already (another pull's, committed first): the reference taken
// is on that one, and a layer extracted on top of this one is on a
// directory Discard removes.
func (p *PendingLayer) Registered() bool { return p.x.registered }

// ExtractLayer is ApplyLayer's first half: the layer tar r extracted on
// top of below, a pending layer not yet committed (nil if the parent is
// registered), or else of parent, a chain ID the caller holds (or "").
// Content that does not hash to diffID, or an error from r, leaves
// nothing behind.
func (s *Store) ExtractLayer(ctx context.Context, parent digest.Digest, below *PendingLayer, diffID digest.Digest, r io.Reader) (*PendingLayer, error) {
	p, err := s.PrepareLayer(parent, below, diffID)
	if err != nil {
		return nil, err
	}
	if err := p.Extract(ctx, r); err != nil {
		p.Discard()
		return nil, err
	}
	return p, nil
}

// PrepareLayer makes the (empty) pending layer diffID on top of below or
// parent, as for ExtractLayer, for Extract to fill.
func (s *Store) PrepareLayer(parent digest.Digest, below *PendingLayer, diffID digest.Digest) (*PendingLayer, error) {
	var parentCache string
	if below != nil {
		parent, parentCache = below.x.chain, below.x.cacheID
	} else {
		var err error
		if parentCache, err = s.parentCacheID(parent); err != nil {
			return nil, err
		}
	}
	x, err := s.prepareLayer("pull", parent, parentCache)
	if err != nil {
		return nil, err
	}
	// The chain ID the layer will have if its content is right (Extract
	// refuses it otherwise): what a layer prepared on top of it needs.
	x.want, x.chain = diffID, nextChain(parent, diffID)
	return &PendingLayer{x: x}, nil
}

// Extract applies the layer tar r (compressed or not) to a prepared
// layer; on an error the caller discards it. Layers of one image can be
// extracted at once, in any order, where IndependentLayers says so;
// otherwise a layer is extracted only once the one below it is.
func (p *PendingLayer) Extract(ctx context.Context, r io.Reader) error {
	return p.x.apply(ctx, p.x.want, r)
}

// IndependentLayers reports whether the layers of an image can be
// extracted at once (the storage driver keeps each layer's own changes
// apart) rather than each after the one below it.
func (s *Store) IndependentLayers() bool { return s.independentLayers() }

// CommitLayer is ApplyLayer's second half: the layer flushed to disk and
// registered (its parent must be registered first), the caller receiving
// a reference on it. It returns the chain ID.
func (s *Store) CommitLayer(p *PendingLayer) (digest.Digest, error) {
	l, err := s.commitLayer(p.x)
	if err != nil {
		return "", err
	}
	// Marked as pulled, a complete layer outlives a daemon killed before
	// its image is registered, so the next pull reuses it ("Already
	// exists"); image prune removes it if no pull ever does.
	if err := os.MkdirAll(s.pulledDir(), 0o700); err == nil {
		err = os.WriteFile(s.pulledMarker(l.ChainID), nil, 0o600)
		if err != nil {
			slog.Warn("image store: cannot mark a pulled layer", "chain", l.ChainID, "err", err)
		}
	}
	return l.ChainID, nil
}

func (s *Store) pulledDir() string { return filepath.Join(s.root, "pulled") }

func (s *Store) pulledMarker(chain digest.Digest) string {
	return filepath.Join(s.pulledDir(), chain.Encoded())
}

// PruneLayers removes the layers no image or container holds (those an
// interrupted pull left for the next one) and returns the bytes freed.
func (s *Store) PruneLayers() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, l := range s.layers {
		if l.refs == 0 {
			n += l.Size
			s.removeLayerLocked(l)
		}
	}
	return n
}

// ChainIDs computes the chain IDs of a list of diff IDs.
func ChainIDs(diffIDs []digest.Digest) ([]digest.Digest, error) { return chainIDs(diffIDs) }

// RegisterPulled stores a pulled image config whose layers the caller
// holds, with its tags; the config is the commit point, as for load.
func (s *Store) RegisterPulled(raw []byte, tags []string) (*Image, error) {
	norm, err := normalizeAll(tags)
	if err != nil {
		return nil, err
	}
	img, err := s.registerImage("pull", raw, norm)
	if err != nil {
		return nil, err
	}
	// The image holds its layers now: they need no mark.
	if chains, err := chainIDs(img.Layers); err == nil {
		for _, c := range chains {
			os.Remove(s.pulledMarker(c))
		}
	}
	return img, nil
}

// RepoTags lists the tags of the repository repo (any form of the name)
// with the image each names, for a push of every tag.
func (s *Store) RepoTags(repo string) (map[string]digest.Digest, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %q: %w", repo, err))
	}
	want := reference.FamiliarName(named)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]digest.Digest{}
	for t, id := range s.tags {
		if r, tag := splitTag(t); r == want {
			out[tag] = id
		}
	}
	return out, nil
}

// OpenLayer streams the uncompressed tar of the layer diffIDs[n] of an
// image (its chain is computed from the diff IDs below it), rebuilt from
// the layer's directory and record. The stream fails at its end if the
// content no longer hashes to the diff ID.
func (s *Store) OpenLayer(diffIDs []digest.Digest, n int) (io.ReadCloser, int64, error) {
	chain, err := chainIDs(diffIDs[:n+1])
	if err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	l := s.layers[chain[n]]
	var copyL layer
	if l != nil {
		copyL = *l
	}
	s.mu.Unlock()
	if l == nil {
		return nil, 0, errdefs.NotFound(fmt.Errorf("layer %s not found", diffIDs[n]))
	}
	f, err := os.Open(s.layerRecord(copyL.ChainID))
	if err != nil {
		return nil, 0, fmt.Errorf("open layer %s: %w", copyL.DiffID, err)
	}
	pr, pw := io.Pipe()
	go func() {
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			pw.CloseWithError(fmt.Errorf("open layer %s: %w", copyL.DiffID, err))
			return
		}
		h := sha256.New()
		if err := archive.Replay(gz, s.driver.Diff(copyL.CacheID), io.MultiWriter(pw, h)); err != nil {
			pw.CloseWithError(fmt.Errorf("read layer %s: %w", copyL.DiffID, err))
			return
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != copyL.DiffID.String() {
			pw.CloseWithError(fmt.Errorf("read layer %s: layer content changed on disk (now %s)", copyL.DiffID, got))
			return
		}
		pw.Close()
	}()
	return pr, copyL.TarSize, nil
}

// TempDir makes a scratch directory for a pull inside the store, on the
// same filesystem as its layers; the store wipes its scratch space at
// start, so a killed daemon leaves nothing there.
func (s *Store) TempDir(prefix string) (string, error) {
	return os.MkdirTemp(s.tmpDir(), prefix)
}
