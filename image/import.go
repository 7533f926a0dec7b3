package image

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/docker/docker/pkg/progress"
	"github.com/docker/docker/pkg/streamformatter"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// importedConfig is the OCI config plus docker's top-level "comment",
// which `docker import -m` sets and `docker inspect` shows.
type importedConfig struct {
	ocispec.Image
	Comment string `json:"comment,omitempty"`
}

// Import turns a rootfs tar (optionally gzip-compressed) into a one-layer
// image, tagged ref when ref is not empty. It stops at the reserve of free
// space (SetMinFreeSpace), leaving nothing behind.
func (s *Store) Import(ctx context.Context, r io.Reader, ref string, cfg ocispec.ImageConfig, comment string, out io.Writer) (*Image, error) {
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
			Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
			Config:   cfg,
			RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{l.DiffID}},
			History:  []ocispec.History{{Created: &now, CreatedBy: "", Comment: comment}},
		},
		Comment: comment,
	}
	raw, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	return s.registerImage("import", raw, tags)
}
