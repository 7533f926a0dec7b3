package image

import (
	"encoding/json"
	"time"

	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/storage"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"

	"github.com/sdengine/engine/image/graphdriver"
)

// InspectImage renders img as `docker image inspect` shows it.
func (s *Store) InspectImage(img *Image) imagetypes.InspectResponse {
	// Re-read the raw config for docker's extensions (Healthcheck,
	// OnBuild, Shell) and the legacy top-level comment.
	var ext struct {
		Config  dockerspec.DockerOCIImageConfig `json:"config"`
		Comment string                          `json:"comment"`
	}
	json.Unmarshal(img.RawConfig, &ext)
	ext.Config.ImageConfig = img.Config.Config

	layers := make([]string, 0, len(img.Layers))
	for _, d := range img.Layers {
		layers = append(layers, d.String())
	}
	tags := img.RepoTags
	if tags == nil {
		tags = []string{}
	}
	resp := imagetypes.InspectResponse{
		ID:          img.ID.String(),
		RepoTags:    tags,
		RepoDigests: repoDigests(img),
		Comment:     ext.Comment,
		//lint:ignore SA1019 the classic store's parent, which Docker still shows
		Parent:       s.Parent(img.ID).String(),
		Created:      img.Created.UTC().Format(time.RFC3339Nano),
		Author:       img.Config.Author,
		Config:       &ext.Config,
		Architecture: img.Config.Architecture,
		Variant:      img.Config.Variant,
		Os:           img.Config.OS,
		OsVersion:    img.Config.OSVersion,
		Size:         img.Size,
		RootFS:       imagetypes.RootFS{Type: "layers", Layers: layers},
		GraphDriver:  storage.DriverData{Name: s.driver.Name(), Data: s.driverData(img)},
	}
	return resp
}

func (s *Store) driverData(img *Image) map[string]string {
	md, ok := s.driver.(graphdriver.MetadataDriver)
	if !ok || len(img.Layers) == 0 {
		return map[string]string{}
	}
	chain, err := chainIDs(img.Layers)
	if err != nil {
		return map[string]string{}
	}
	s.mu.Lock()
	l := s.layers[chain[len(chain)-1]]
	s.mu.Unlock()
	if l == nil {
		return map[string]string{}
	}
	data, err := md.Metadata(l.CacheID)
	if err != nil {
		return map[string]string{}
	}
	return data
}

// Summary renders img for GET /images/json. Containers is -1 (unknown)
// for the daemon to fill in.
func (s *Store) Summary(img *Image) imagetypes.Summary {
	tags := img.RepoTags
	if tags == nil {
		tags = []string{}
	}
	return imagetypes.Summary{
		ID:          img.ID.String(),
		RepoTags:    tags,
		RepoDigests: repoDigests(img),
		Created:     img.Created.Unix(),
		Size:        img.Size,
		SharedSize:  -1,
		Containers:  -1,
		Labels:      img.Config.Config.Labels,
	}
}

func repoDigests(img *Image) []string {
	if img.RepoDigests == nil {
		return []string{}
	}
	return img.RepoDigests
}
