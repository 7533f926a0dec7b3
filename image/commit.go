package image

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// CommitOptions describes an image made from a parent image (or scratch)
// plus, when ContainerID is set, one layer holding that container's
// changes (its writable layer).
type CommitOptions struct {
	// Parent is the image the new one builds on; "" is scratch.
	Parent digest.Digest
	// ContainerID's writable layer becomes the new top layer; "" adds no
	// layer (a config-only image, as the builder makes for ENV, CMD...).
	ContainerID string
	// Config returns the raw image config given the final diff IDs, so the
	// caller writes everything else (history, runtime config) itself.
	Config func(diffIDs []digest.Digest) ([]byte, error)
	// Tags to point at the new image.
	Tags []string
	// Mountpoints are paths (relative to the rootfs) the runtime may have
	// created in the writable layer to mount on: left out of the layer
	// when they are empty (archive.TarDirExcept).
	Mountpoints []string
}

// emptyTarDiffID is the diff ID of a tar with no entries.
const emptyTarDiffID = digest.Digest("sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef")

// Commit registers a new image as opts says. The parent is remembered
// (the classic store's Parent, which `docker history` and inspect show).
func (s *Store) Commit(ctx context.Context, opts CommitOptions) (*Image, error) {
	var tags []string
	for _, t := range opts.Tags {
		n, err := normalizeTag(t)
		if err != nil {
			return nil, err
		}
		tags = append(tags, n)
	}
	var chain, diffIDs []digest.Digest
	if opts.Parent != "" {
		s.mu.Lock()
		p := s.images[opts.Parent]
		if p == nil {
			s.mu.Unlock()
			return nil, errdefs.NotFound(fmt.Errorf("No such image: %s", opts.Parent))
		}
		chain = append(chain, p.chain...)
		diffIDs = append(diffIDs, p.config.RootFS.DiffIDs...)
		// Hold the parent's layers while the new layer is made, so that a
		// concurrent rmi of the parent cannot take them away.
		for _, c := range chain {
			s.layers[c].refs++
		}
		s.mu.Unlock()
		defer s.releaseLayers(chain)
	}
	if opts.ContainerID != "" {
		rw, err := s.rw(opts.ContainerID)
		if err != nil {
			return nil, err
		}
		var top digest.Digest
		if len(chain) > 0 {
			top = chain[len(chain)-1]
		}
		if len(rw.Chain) != len(chain) || (len(chain) > 0 && rw.Chain[len(rw.Chain)-1] != top) {
			return nil, errdefs.InvalidParameter(fmt.Errorf("container %s was not created from image %s", opts.ContainerID, opts.Parent))
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(s.diffRW(rw, pw, opts.Mountpoints)) }()
		l, err := s.createLayer(ctx, "commit", top, "", pr)
		pr.CloseWithError(err)
		if err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
		defer s.releaseLayers([]digest.Digest{l.ChainID})
		// No change at all is no layer (an empty_layer history entry), as
		// in Docker.
		if l.DiffID != emptyTarDiffID {
			diffIDs = append(diffIDs, l.DiffID)
		}
	}
	raw, err := opts.Config(diffIDs)
	if err != nil {
		return nil, err
	}
	img, err := s.registerImage("commit", raw, tags)
	if err != nil {
		return nil, err
	}
	if opts.Parent != "" && opts.Parent != img.ID {
		if err := s.setParent(img.ID, opts.Parent); err != nil {
			slog.Warn("image store: cannot record the parent image", "id", img.ID, "parent", opts.Parent, "err", err)
		}
	}
	// Docker's order: the image is created, then tagged.
	s.event(eventtypes.ActionCreate, img.ID, "", img.Config.Config.Labels)
	for _, t := range tags {
		s.event(eventtypes.ActionTag, img.ID, t, img.Config.Config.Labels)
	}
	return img, nil
}

// diffRW writes the changes of a container's writable layer as a layer
// tar. On overlay2 the layer's directory holds exactly its changes; on
// vfs it is a full copy, compared with the parent's.
func (s *Store) diffRW(rw *rwLayer, w io.Writer, mountpoints []string) error {
	dir := s.driver.Diff(rw.CacheID)
	if s.driver.Whiteouts() == archive.WhiteoutOverlay {
		return archive.TarDirExcept(dir, w, mountpoints)
	}
	base := ""
	if n := len(rw.Chain); n > 0 {
		s.mu.Lock()
		l := s.layers[rw.Chain[n-1]]
		s.mu.Unlock()
		if l == nil {
			return errdefs.NotFound(fmt.Errorf("layer %s missing", rw.Chain[n-1]))
		}
		base = s.driver.Diff(l.CacheID)
	}
	return archive.TarChanges(base, dir, w)
}

// The parent links of the classic store live beside the image configs,
// one small file per image that has a parent:
//
//	imagedb/parent/<image hex>   the parent's ID ("sha256:...")
func (s *Store) parentDir() string { return filepath.Join(s.root, "imagedb", "parent") }

func (s *Store) setParent(id, parent digest.Digest) error {
	if err := os.MkdirAll(s.parentDir(), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.parentDir(), id.Encoded()), []byte(parent.String()), 0o600)
}

// Parent returns the image id was committed or built on, or "" when it
// has none or that image is gone. A link naming a removed image is
// dropped on the way.
func (s *Store) Parent(id digest.Digest) digest.Digest {
	p := filepath.Join(s.parentDir(), id.Encoded())
	data, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	parent, err := digest.Parse(strings.TrimSpace(string(data)))
	s.mu.Lock()
	_, selfOK := s.images[id]
	_, parentOK := s.images[parent]
	s.mu.Unlock()
	if err != nil || !selfOK {
		os.Remove(p)
		return ""
	}
	if !parentOK {
		return ""
	}
	return parent
}

// Children returns the images whose parent is id.
func (s *Store) Children(id digest.Digest) []digest.Digest {
	ents, err := os.ReadDir(s.parentDir())
	if err != nil {
		return nil
	}
	var out []digest.Digest
	for _, e := range ents {
		child := digest.NewDigestFromEncoded(digest.SHA256, e.Name())
		if child.Validate() != nil {
			continue
		}
		if s.Parent(child) == id {
			out = append(out, child)
		}
	}
	return out
}
