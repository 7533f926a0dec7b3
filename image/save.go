package image

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/archive"
)

type savedImage struct {
	img    *image
	tags   []string
	layers []layer // snapshot of the chain's metadata
}

// Save writes the images refs name as a docker-archive (docker 25+
// layout: OCI blobs/sha256, index.json and oci-layout, plus the legacy
// manifest.json). A ref given by name saves that tag; one given by ID
// saves the image untagged.
//
// Layer tars are replayed from the layer's directory and its recorded
// headers rather than re-tarred, because only the original byte stream
// hashes to the diff IDs in the config that `docker load` verifies.
//
// An image's config and layer blobs carry the image's creation time as
// their modification time, as Docker writes them (the first image to
// write a shared layer gives it its time); everything else has the
// epoch, which keeps the archive deterministic.
func (s *Store) Save(ctx context.Context, refs []string, w io.Writer) error {
	saved, err := s.collect(refs)
	if err != nil {
		return err
	}
	defer func() {
		for _, si := range saved {
			s.releaseLayers(si.img.chain)
		}
	}()
	tw := tar.NewWriter(w)
	now := time.Unix(0, 0)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: now}); err != nil {
			return err
		}
	}
	written := map[digest.Digest]bool{}
	writeBlob := func(d digest.Digest, data []byte, mtime time.Time) error {
		if written[d] {
			return nil
		}
		written[d] = true
		return writeFile(tw, "blobs/sha256/"+d.Encoded(), data, mtime)
	}

	var manifest []manifestEntry
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	for _, si := range saved {
		if err := ctx.Err(); err != nil {
			return err
		}
		created := now
		if c := si.img.config.Created; c != nil {
			// Truncated, not rounded (tar's default), so that the second
			// is the one the config's own time names.
			created = c.Truncate(time.Second)
		}
		if err := writeBlob(si.img.id, si.img.raw, created); err != nil {
			return err
		}
		m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: si.img.id, Size: int64(len(si.img.raw))},
			Layers: []ocispec.Descriptor{}}
		entry := manifestEntry{Config: "blobs/sha256/" + si.img.id.Encoded(), RepoTags: si.tags, Layers: []string{}}
		for _, l := range si.layers {
			if !written[l.DiffID] {
				written[l.DiffID] = true
				if err := s.writeLayer(tw, l, created); err != nil {
					return err
				}
			}
			m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: l.DiffID, Size: l.TarSize})
			entry.Layers = append(entry.Layers, "blobs/sha256/"+l.DiffID.Encoded())
		}
		mraw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		md := digest.FromBytes(mraw)
		if err := writeBlob(md, mraw, now); err != nil {
			return err
		}
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: md, Size: int64(len(mraw))}
		if len(si.tags) == 0 {
			idx.Manifests = append(idx.Manifests, desc)
		}
		for _, t := range si.tags {
			d := desc
			_, tagOnly := splitTag(t)
			d.Annotations = map[string]string{annotationName: fullName(t), ocispec.AnnotationRefName: tagOnly}
			idx.Manifests = append(idx.Manifests, d)
		}
		manifest = append(manifest, entry)
	}
	// Fixed order keeps the archive deterministic.
	for _, f := range []struct {
		name string
		v    any
	}{{"index.json", idx}, {"manifest.json", manifest}, {"oci-layout", ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion}}} {
		data, err := json.Marshal(f.v)
		if err != nil {
			return err
		}
		if err := writeFile(tw, f.name, data, now); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	for _, si := range saved {
		s.event(eventtypes.ActionSave, si.img.id, "", si.img.config.Config.Labels)
	}
	return nil
}

func (s *Store) collect(refs []string) ([]savedImage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []savedImage
	pos := map[digest.Digest]int{}
	var assocs []saveAssoc
	for _, ref := range refs {
		a, err := s.saveAssocsLocked(ref)
		if err != nil {
			return nil, err
		}
		assocs = append(assocs, a...)
	}
	for _, a := range assocs {
		img, tag := a.img, a.tag
		i, ok := pos[img.id]
		if !ok {
			si := savedImage{img: img}
			for _, c := range img.chain {
				// Held until the save ends so a concurrent delete cannot
				// pull the layer out from under the stream.
				s.layers[c].refs++
				si.layers = append(si.layers, *s.layers[c])
			}
			out = append(out, si)
			i = len(out) - 1
			pos[img.id] = i
		}
		if tag != "" && !slices.Contains(out[i].tags, tag) {
			out[i].tags = append(out[i].tags, tag)
		}
	}
	return out, nil
}

type saveAssoc struct {
	img *image
	tag string // "" saves the image untagged
}

// saveAssocsLocked is what one name given to save stands for, as in
// Docker: a repository name without tag or digest is every tag of it
// (and the images its digests name, untagged), or an ID prefix if the
// repository has none; name@digest is the image, untagged; anything
// else is resolved as everywhere else.
func (s *Store) saveAssocsLocked(ref string) ([]saveAssoc, error) {
	if named, err := reference.ParseNormalizedNamed(ref); err == nil && reference.IsNameOnly(named) {
		repo := reference.FamiliarName(named)
		var out []saveAssoc
		for t, id := range s.tags {
			if r, _ := splitTag(t); r == repo && s.images[id] != nil {
				out = append(out, saveAssoc{img: s.images[id], tag: t})
			}
		}
		m := s.dist()
		m.mu.Lock()
		for dref, id := range m.RepoDigests {
			if r, _, ok := strings.Cut(dref, "@"); ok && r == repo && s.images[id] != nil {
				out = append(out, saveAssoc{img: s.images[id]})
			}
		}
		m.mu.Unlock()
		if len(out) > 0 {
			// Tags in order: the archive is the same for the same store.
			sort.Slice(out, func(i, j int) bool {
				if out[i].tag != out[j].tag {
					return out[i].tag < out[j].tag
				}
				return out[i].img.id < out[j].img.id
			})
			return out, nil
		}
	}
	img, tag, err := s.resolveLocked(ref)
	if err != nil {
		return nil, err
	}
	return []saveAssoc{{img: img, tag: tag}}, nil
}

func writeFile(tw *tar.Writer, name string, data []byte, mtime time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: mtime}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// writeLayer streams the layer's original tar into tw and fails if the
// result does not hash to the diff ID (e.g. the layer dir was modified).
func (s *Store) writeLayer(tw *tar.Writer, l layer, mtime time.Time) error {
	f, err := os.Open(s.layerRecord(l.ChainID))
	if err != nil {
		return fmt.Errorf("save layer %s: %w", l.DiffID, err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("save layer %s: %w", l.DiffID, err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/" + l.DiffID.Encoded(), Typeflag: tar.TypeReg,
		Mode: 0o644, Size: l.TarSize, ModTime: mtime}); err != nil {
		return err
	}
	h := sha256.New()
	if err := archive.Replay(gz, s.driver.Diff(l.CacheID), io.MultiWriter(tw, h)); err != nil {
		return fmt.Errorf("save layer %s: %w", l.DiffID, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != l.DiffID.String() {
		return fmt.Errorf("save layer %s: layer content changed on disk (now %s)", l.DiffID, got)
	}
	return nil
}
