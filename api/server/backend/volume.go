package backend

import (
	"context"

	"github.com/docker/docker/api/types/filters"
	volumetypes "github.com/docker/docker/api/types/volume"
)

// Volumes serves /volumes/...
type Volumes interface {
	VolumeCreate(ctx context.Context, opts volumetypes.CreateOptions) (*volumetypes.Volume, error)
	VolumeInspect(ctx context.Context, name string) (*volumetypes.Volume, error)
	VolumeList(ctx context.Context, f filters.Args) (*volumetypes.ListResponse, error)
	VolumeRemove(ctx context.Context, name string, force bool) error
	// VolumesPrune removes unused volumes: anonymous ones only unless all
	// (or the "all" filter).
	VolumesPrune(ctx context.Context, f filters.Args, all bool) (*volumetypes.PruneReport, error)
}
