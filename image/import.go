package image

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/pkg/progress"
	"github.com/docker/docker/pkg/streamformatter"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/platform"
)

// importedConfig is the OCI config plus docker's top-level "comment",
// which `docker import -m` sets and `docker inspect` shows.
type importedConfig struct {
	ocispec.Image
	Comment string `json:"comment,omitempty"`
}

// ImportOptions is what an import says of the image besides its rootfs.
type ImportOptions struct {
	Config  ocispec.ImageConfig
	Comment string
	// Platform is the image's os/architecture/variant; an empty OS or
	// architecture is this engine's own (platform.Default).
	Platform ocispec.Platform
}

// Import turns a rootfs tar (optionally gzip-compressed) into a one-layer
// image, tagged ref when ref is not empty. It stops at the reserve of free
// space (SetMinFreeSpace), leaving nothing behind.
func (s *Store) Import(ctx context.Context, r io.Reader, ref string, opts ImportOptions, out io.Writer) (*Image, error) {
	plat := opts.Platform
	if plat.OS == "" || plat.Architecture == "" {
		plat = platform.Default()
	}
	// An image is only ever of an OS this engine runs, as Docker's own
	// image store has it.
	if err := platform.CheckOS(plat.OS); err != nil {
		return nil, err
	}
	var tags []string
	if ref != "" {
		t, err := normalizeTag(ref)
		if err != nil {
			return nil, err
		}
		tags = []string{t}
	}
	if out != nil {
		pr := progress.NewProgressReader(io.NopCloser(r), streamformatter.NewJSONProgressOutput(out, false), 0, "", "Importing")
		defer pr.Close()
		r = pr
	}
	l, err := s.createLayer(ctx, "import", "", "", r)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer s.releaseLayers([]digest.Digest{l.ChainID})

	now := time.Now().UTC()
	conf := importedConfig{
		Image: ocispec.Image{
			Created:  &now,
			Platform: ocispec.Platform{OS: plat.OS, Architecture: plat.Architecture, Variant: plat.Variant, OSVersion: plat.OSVersion},
			Config:   opts.Config,
			RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{l.DiffID}},
			History:  []ocispec.History{{Created: &now, CreatedBy: "", Comment: opts.Comment}},
		},
		Comment: opts.Comment,
	}
	raw, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	img, err := s.registerImage("import", raw, tags)
	if err != nil {
		return nil, err
	}
	// Docker's order: the tag, then the import.
	for _, t := range tags {
		s.event(eventtypes.ActionTag, img.ID, t, img.Config.Config.Labels)
	}
	s.event(eventtypes.ActionImport, img.ID, "", img.Config.Config.Labels)
	return img, nil
}
