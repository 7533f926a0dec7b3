package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/progress"
	"github.com/docker/docker/pkg/streamformatter"
	"github.com/docker/docker/pkg/stringid"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
)

const (
	maxJSONSize = 16 << 20 // manifests, indexes and configs are small
	// docker's name for a manifest list, accepted like an OCI index.
	dockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
	annotationName     = "io.containerd.image.name"
)

// manifestEntry is one image in a `docker save` manifest.json.
type manifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// loadedImage is an image found in the archive, before its layers are read.
type loadedImage struct {
	config []byte
	layers []string // paths inside the archive
	tags   []string // normalized
}

// Load imports a `docker save` archive or an OCI image layout tar. The
// outer tar is unpacked into a scratch dir under the store (never into
// memory), then each layer is applied and checked against the config's
// diff IDs. Every write stops at the reserve of free space
// (SetMinFreeSpace). It returns what it prints: the loaded tags, or the
// IDs of untagged images.
func (s *Store) Load(ctx context.Context, r io.Reader, out io.Writer) ([]string, error) {
	return s.LoadWithProgress(ctx, r, out, true)
}

// LoadWithProgress is Load that, unless quiet, also draws Docker's
// "Loading layer" bars (JSON messages with progressDetail, one per layer
// that is not present yet, named by its diff ID's first 12 digits) on out.
func (s *Store) LoadWithProgress(ctx context.Context, r io.Reader, out io.Writer, quiet bool) ([]string, error) {
	var pout progress.Output
	if !quiet && out != nil {
		pout = streamformatter.NewJSONProgressOutput(out, false)
	}
	if err := s.checkSpace(s.tmpDir(), 0); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	dir, err := os.MkdirTemp(s.tmpDir(), "load-")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer os.RemoveAll(dir)
	if _, err := archive.Apply(ctx, r, dir, archive.ApplyOptions{Whiteouts: archive.WhiteoutNone,
		Check: func(written int64) error { return s.checkSpace(dir, written) }}); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	crashpoint.Hit("load-after-archive-extract")
	var imgs []loadedImage
	if _, err := os.Lstat(filepath.Join(dir, "manifest.json")); err == nil {
		imgs, err = readDockerArchive(dir)
		if err != nil {
			return nil, err
		}
	} else if _, err := os.Lstat(filepath.Join(dir, ocispec.ImageIndexFile)); err == nil {
		imgs, err = readOCILayout(dir)
		if err != nil {
			return nil, err
		}
	} else {
		return nil, errdefs.InvalidParameter(errors.New("load: archive has neither manifest.json nor index.json"))
	}
	var names []string
	for _, li := range imgs {
		img, err := s.loadImage(ctx, dir, li, pout)
		if err != nil {
			return names, err
		}
		// One event per image, its tags set silently, as in Docker.
		s.event(eventtypes.ActionLoad, img.ID, "", img.Config.Config.Labels)
		var lines []string
		for _, t := range li.tags {
			lines = append(lines, "Loaded image: "+t)
			names = append(names, t)
		}
		if len(li.tags) == 0 {
			lines = append(lines, "Loaded image ID: "+img.ID.String())
			names = append(names, img.ID.String())
		}
		if out != nil {
			enc := json.NewEncoder(out)
			for _, l := range lines {
				if err := enc.Encode(jsonmessage.JSONMessage{Stream: l + "\n"}); err != nil {
					return names, err
				}
			}
		}
	}
	return names, nil
}

// loadImage applies the image's layers that are not present yet, then
// registers the config. References taken along the way are dropped at
// the end, so a failure leaves nothing new behind.
func (s *Store) loadImage(ctx context.Context, dir string, li loadedImage, pout progress.Output) (*Image, error) {
	img, err := s.parseImage(li.config)
	if err != nil {
		return nil, err
	}
	if len(img.chain) != len(li.layers) {
		return nil, errdefs.InvalidParameter(fmt.Errorf("load: image %s lists %d layers but its config has %d diff IDs", img.id, len(li.layers), len(img.chain)))
	}
	var held []digest.Digest
	defer func() { s.releaseLayers(held) }()
	var parent digest.Digest
	for i, chain := range img.chain {
		if !s.acquireLayer(chain) {
			f, err := openInArchive(dir, li.layers[i])
			if err != nil {
				return nil, err
			}
			var src io.ReadCloser = f
			if pout != nil {
				var size int64
				if fi, err := f.Stat(); err == nil {
					size = fi.Size()
				}
				// Its Close draws the bar's end and closes f.
				src = progress.NewProgressReader(f, pout, size, stringid.TruncateID(img.config.RootFS.DiffIDs[i].String()), "Loading layer")
			}
			_, err = s.createLayer(ctx, "load", parent, img.config.RootFS.DiffIDs[i], src)
			src.Close()
			if err != nil {
				return nil, fmt.Errorf("load layer %s: %w", li.layers[i], err)
			}
		}
		held = append(held, chain)
		parent = chain
	}
	return s.registerImage("load", li.config, li.tags)
}

// openInArchive opens a file named by the archive's own metadata; names
// that climb out of the archive are hostile.
func openInArchive(dir, name string) (*os.File, error) {
	clean := path.Clean(name)
	if name == "" || path.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, errdefs.InvalidParameter(fmt.Errorf("load: path %q points outside the archive", name))
	}
	p, err := securejoin.SecureJoin(dir, clean)
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("load: %q: %w", name, err))
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("load: %q missing from archive: %w", name, err))
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errdefs.InvalidParameter(fmt.Errorf("load: %q is not a regular file", name))
	}
	return f, nil
}

func readArchiveJSON(dir, name string, v any) ([]byte, error) {
	f, err := openInArchive(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJSONSize+1))
	if err != nil {
		return nil, fmt.Errorf("load: read %s: %w", name, err)
	}
	if len(data) > maxJSONSize {
		return nil, errdefs.InvalidParameter(fmt.Errorf("load: %s is too large", name))
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("load: invalid %s: %w", name, err))
		}
	}
	return data, nil
}

func readDockerArchive(dir string) ([]loadedImage, error) {
	var entries []manifestEntry
	if _, err := readArchiveJSON(dir, "manifest.json", &entries); err != nil {
		return nil, err
	}
	var out []loadedImage
	for _, e := range entries {
		raw, err := readArchiveJSON(dir, e.Config, nil)
		if err != nil {
			return nil, err
		}
		tags, err := normalizeAll(e.RepoTags)
		if err != nil {
			return nil, err
		}
		out = append(out, loadedImage{config: raw, layers: e.Layers, tags: tags})
	}
	return out, nil
}

func normalizeAll(refs []string) ([]string, error) {
	var out []string
	for _, r := range refs {
		t, err := normalizeTag(r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func blobPath(d digest.Digest) (string, error) {
	if err := d.Validate(); err != nil {
		return "", errdefs.InvalidParameter(fmt.Errorf("load: invalid digest %q: %w", d, err))
	}
	return path.Join(ocispec.ImageBlobsDir, string(d.Algorithm()), d.Encoded()), nil
}

// readBlobJSON reads a small blob and checks it against its digest.
func readBlobJSON(dir string, d digest.Digest, v any) ([]byte, error) {
	p, err := blobPath(d)
	if err != nil {
		return nil, err
	}
	data, err := readArchiveJSON(dir, p, v)
	if err != nil {
		return nil, err
	}
	if d.Algorithm().FromBytes(data) != d {
		return nil, errdefs.InvalidParameter(fmt.Errorf("load: blob %s does not match its digest", d))
	}
	return data, nil
}

func readOCILayout(dir string) ([]loadedImage, error) {
	var idx ocispec.Index
	if _, err := readArchiveJSON(dir, ocispec.ImageIndexFile, &idx); err != nil {
		return nil, err
	}
	byManifest := map[digest.Digest]int{}
	var out []loadedImage
	for _, desc := range idx.Manifests {
		m, err := resolveManifest(dir, desc, 0)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		tag := ociTag(desc.Annotations)
		i, seen := byManifest[m.Config.Digest]
		if !seen {
			raw, err := readBlobJSON(dir, m.Config.Digest, nil)
			if err != nil {
				return nil, err
			}
			li := loadedImage{config: raw}
			for _, l := range m.Layers {
				p, err := blobPath(l.Digest)
				if err != nil {
					return nil, err
				}
				li.layers = append(li.layers, p)
			}
			out = append(out, li)
			i = len(out) - 1
			byManifest[m.Config.Digest] = i
		}
		if tag != "" {
			out[i].tags = append(out[i].tags, tag)
		}
	}
	return out, nil
}

// ociTag derives a tag from a descriptor's annotations: containerd's full
// image name if present, else org.opencontainers.image.ref.name when it
// is a full reference (a bare tag names no repository, so it is ignored).
func ociTag(ann map[string]string) string {
	for _, key := range []string{annotationName, ocispec.AnnotationRefName} {
		v := ann[key]
		if v == "" || (key == ocispec.AnnotationRefName && !strings.ContainsAny(v, ":/")) {
			continue
		}
		if t, err := normalizeTag(v); err == nil {
			return t
		}
	}
	return ""
}

// resolveManifest follows indexes down to the manifest for this
// platform; nil means the descriptor holds nothing for us.
func resolveManifest(dir string, desc ocispec.Descriptor, depth int) (*ocispec.Manifest, error) {
	if depth > 4 {
		return nil, errdefs.InvalidParameter(errors.New("load: indexes nested too deeply"))
	}
	switch desc.MediaType {
	case ocispec.MediaTypeImageIndex, dockerManifestList:
		var idx ocispec.Index
		if _, err := readBlobJSON(dir, desc.Digest, &idx); err != nil {
			return nil, err
		}
		for _, d := range idx.Manifests {
			if !platformMatches(d.Platform) {
				continue
			}
			if m, err := resolveManifest(dir, d, depth+1); err != nil || m != nil {
				return m, err
			}
		}
		return nil, nil
	case ocispec.MediaTypeImageManifest, "application/vnd.docker.distribution.manifest.v2+json":
		var m ocispec.Manifest
		if _, err := readBlobJSON(dir, desc.Digest, &m); err != nil {
			return nil, err
		}
		return &m, nil
	}
	return nil, nil
}

func platformMatches(p *ocispec.Platform) bool {
	return p == nil || platform.Matches(platform.Default(), *p)
}
