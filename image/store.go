// Package image is the content-addressed image store: image configs by
// digest, layers by chain ID on a graph driver, and repository tags.
//
// On-disk layout under root, every file replaced atomically:
//
//	imagedb/sha256/<hex>          image config, verbatim
//	layerdb/sha256/<hex>.json     layer metadata, keyed by chain ID
//	layerdb/sha256/<hex>.tar.gz   record that rebuilds the layer's tar (for save)
//	mounts/<container>.json       container RW layers
//	repositories.json             tags
//	intents/<image hex>.json      tags a load or import is about to set (recover.go)
//	.repositories.json.spare      its spare, for rewrites on a full disk (saveTagsLocked)
//	tmp/                          scratch space for load, wiped at start
package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	units "github.com/docker/go-units"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/image/graphdriver"
	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/fsreserve"
)

// Image is one stored image as callers see it (a snapshot copy).
type Image struct {
	ID        digest.Digest
	Config    ocispec.Image
	RawConfig []byte
	RepoTags  []string
	// RepoDigests are the "name@sha256:..." references a pull or push
	// recorded for the image (registry.go).
	RepoDigests []string
	Size        int64 // sum of layer sizes
	Created     time.Time
	Layers      []digest.Digest // diff IDs
}

type image struct {
	id     digest.Digest
	config ocispec.Image
	raw    []byte
	chain  []digest.Digest // chain IDs, base first
}

// Store holds images and layers under one root directory.
type Store struct {
	root   string
	driver graphdriver.Driver

	mu     sync.Mutex
	images map[digest.Digest]*image
	layers map[digest.Digest]*layer // by chain ID
	tags   map[string]digest.Digest // normalized "name:tag" -> image ID
	mounts map[string]*rwLayer      // by container ID
	// tagsStale: repositories.json still names a removed image (its save
	// failed); the next save fixes it.
	tagsStale bool
	// reserve is the free space image writes leave (set once, at start).
	reserve fsreserve.Reserve
	// distMeta is the registry metadata (registry.go), read at first use.
	distOnce sync.Once
	distMeta *distMeta
	// searchList is Red Hat's search list (set once, at start): an
	// unqualified name is looked up as each of its registries' in turn.
	searchList []string
	// events reports operations to the daemon's event log (events.go).
	events EventFunc
}

func (s *Store) imageDir() string  { return filepath.Join(s.root, "imagedb", "sha256") }
func (s *Store) layerDir() string  { return filepath.Join(s.root, "layerdb", "sha256") }
func (s *Store) mountDir() string  { return filepath.Join(s.root, "mounts") }
func (s *Store) tmpDir() string    { return filepath.Join(s.root, "tmp") }
func (s *Store) intentDir() string { return filepath.Join(s.root, "intents") }

// New opens the store at root, loading whatever survived on disk: torn or
// corrupt files are logged and skipped without affecting other images.
// Then it finishes or undoes what a crash left half done (recover.go).
func New(root string, driver graphdriver.Driver) (*Store, error) {
	s := &Store{root: root, driver: driver,
		images: map[digest.Digest]*image{}, layers: map[digest.Digest]*layer{},
		tags: map[string]digest.Digest{}, mounts: map[string]*rwLayer{}}
	if ents, _ := os.ReadDir(s.tmpDir()); len(ents) > 0 {
		slog.Info("image store: removing the scratch space of interrupted loads", "entries", len(ents))
	}
	if err := os.RemoveAll(s.tmpDir()); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	for _, d := range []string{s.imageDir(), s.layerDir(), s.mountDir(), s.tmpDir(), s.intentDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	s.removeTempFiles()
	rec := &recovery{}
	s.loadLayers(rec)
	s.loadImages(rec)
	s.loadTags(rec)
	s.loadMounts(rec)
	s.recover(rec)
	s.keepTagsSpare()
	return s, nil
}

// SetMinFreeSpace sets the reserve of free space that import and load
// leave on the filesystem they write to (dockerd --min-free-space). Call
// it before the store is used.
func (s *Store) SetMinFreeSpace(r fsreserve.Reserve) { s.reserve = r }

// SetSearchList makes an unqualified name ("fedora") resolve to the
// first of "host/fedora" for the hosts in order ("docker.io" is Docker
// Hub's "fedora"), so that an image pulled through the search list
// (distribution) is found by the name it was pulled by. Nil: Docker's
// behaviour.
func (s *Store) SetSearchList(hosts []string) { s.searchList = hosts }

// checkSpace is the reserve check for a write into dir that has written
// bytes so far: it fails when the next archive.DefaultCheckEvery bytes
// could cross the reserve. The error names the data root (the store's
// parent), not dir, and says how much was written before the stop.
func (s *Store) checkSpace(dir string, written int64) error {
	err := s.reserve.Check(dir, archive.DefaultCheckEvery)
	var e *fsreserve.Error
	if !errors.As(err, &e) {
		return err
	}
	e.Path = filepath.Dir(s.root)
	slog.Warn("image store: stopping a write at the reserve of free space", "written", written, "err", err)
	if written > 0 {
		return fmt.Errorf("stopped after writing %s: %w", units.BytesSize(float64(written)), err)
	}
	return err
}

// removeTempFiles removes what an interrupted atomic write of
// repositories.json left in the store's root.
func (s *Store) removeTempFiles() {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			os.Remove(filepath.Join(s.root, e.Name()))
		}
	}
}

// keepTagsSpare makes sure repositories.json has its spare (a store from
// before spares, or one whose spare could not be made for want of space),
// so that a removal can rewrite it on a full filesystem.
func (s *Store) keepTagsSpare() {
	if _, err := os.Lstat(s.tagsPath()); err != nil {
		return // the first save makes both
	}
	if _, err := os.Lstat(atomicfile.SpareName(s.tagsPath())); err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.saveTagsLocked(); err != nil {
		slog.Warn("image store: cannot make repositories.json's spare yet", "err", err)
	}
}

// Driver returns the graph driver the store keeps layers on.
func (s *Store) Driver() graphdriver.Driver { return s.driver }

func (s *Store) loadImages(rec *recovery) {
	ents, err := os.ReadDir(s.imageDir())
	if err != nil {
		slog.Error("image store: cannot list images", "err", err)
		rec.unsure = true
		return
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(s.imageDir(), name)
		if strings.HasPrefix(name, ".") {
			os.Remove(p) // torn temp file
			continue
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			slog.Error("image store: cannot read image config", "id", name, "err", err)
			rec.unsure = true
			continue
		}
		if digest.FromBytes(raw).Encoded() != name {
			rec.removeFile(p, "image config does not match its digest", "id", name)
			continue
		}
		img, err := s.parseImage(raw)
		if err != nil {
			rec.removeFile(p, "invalid image config", "id", name, "err", err)
			continue
		}
		missing := digest.Digest("")
		for _, c := range img.chain {
			if s.layers[c] == nil {
				missing = c
				break
			}
		}
		if missing != "" {
			// Configs are written after their layers, so this is damage,
			// not a crash; the image cannot be used either way.
			if !rec.unsure {
				rec.removeFile(p, "image lacks a layer", "id", name, "chain", missing)
			} else {
				slog.Error("image store: image lacks a layer, ignoring", "id", name, "chain", missing)
			}
			continue
		}
		for _, c := range img.chain {
			s.layers[c].refs++
		}
		s.images[img.id] = img
	}
}

func (s *Store) parseImage(raw []byte) (*image, error) {
	var cfg ocispec.Image
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid image config: %w", err))
	}
	if cfg.RootFS.Type != "" && cfg.RootFS.Type != "layers" {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid image config: rootfs type %q", cfg.RootFS.Type))
	}
	chain, err := chainIDs(cfg.RootFS.DiffIDs)
	if err != nil {
		return nil, err
	}
	return &image{id: digest.FromBytes(raw), config: cfg, raw: raw, chain: chain}, nil
}

// snapshot builds the caller-facing copy; s.mu must be held.
func (s *Store) snapshot(img *image) *Image {
	out := &Image{ID: img.id, Config: img.config, RawConfig: img.raw, RepoTags: []string{},
		Layers: append([]digest.Digest(nil), img.config.RootFS.DiffIDs...)}
	if img.config.Created != nil {
		out.Created = *img.config.Created
	}
	for _, c := range img.chain {
		out.Size += s.layers[c].Size
	}
	for tag, id := range s.tags {
		if id == img.id {
			out.RepoTags = append(out.RepoTags, tag)
		}
	}
	sort.Strings(out.RepoTags)
	out.RepoDigests = s.repoDigestsLocked(img.id)
	return out
}

// Get finds an image by name[:tag], full ID (with or without "sha256:")
// or unique ID prefix.
func (s *Store) Get(ref string) (*Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img, _, err := s.resolveLocked(ref)
	if err != nil {
		return nil, err
	}
	return s.snapshot(img), nil
}

// resolveLocked returns the image ref names and, when ref was a tag, the
// normalized tag ("" when ref named the image by ID).
func (s *Store) resolveLocked(ref string) (*image, string, error) {
	notFound := errdefs.NotFound(fmt.Errorf("No such image: %s", ref))
	hexPart := strings.TrimPrefix(ref, "sha256:")
	prefixed := hexPart != ref
	if len(hexPart) == 64 && isHex(hexPart) {
		if img := s.images[digest.NewDigestFromEncoded(digest.SHA256, hexPart)]; img != nil {
			return img, "", nil
		}
		return nil, "", notFound
	}
	// What is neither an ID nor a reference is refused, as Docker refuses
	// it ("busybox:sha256:<id>": invalid reference format), not missed.
	if _, err := reference.ParseAnyReference(ref); err != nil {
		return nil, "", errdefs.InvalidParameter(err)
	}
	if img := s.resolveRepoDigestLocked(ref); img != nil {
		return img, "", nil
	}
	if !prefixed {
		for _, cand := range s.searchNamesLocked(ref) {
			if tag, err := normalizeTag(cand); err == nil {
				if id, ok := s.tags[tag]; ok && s.images[id] != nil {
					return s.images[id], tag, nil
				}
			}
		}
	}
	if isHex(hexPart) {
		var found *image
		for id, img := range s.images {
			if strings.HasPrefix(id.Encoded(), hexPart) {
				if found != nil {
					return nil, "", errdefs.NotFound(fmt.Errorf("No such image: %s (ambiguous ID prefix)", ref))
				}
				found = img
			}
		}
		if found != nil {
			return found, "", nil
		}
	}
	return nil, "", notFound
}

// List returns every image, newest first.
func (s *Store) List() []*Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Image, 0, len(s.images))
	for _, img := range s.images {
		out = append(out, s.snapshot(img))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
