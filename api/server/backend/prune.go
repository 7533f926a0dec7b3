package backend

import (
	"context"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/filters"
	imagetypes "github.com/docker/docker/api/types/image"
)

// DiskUsageOptions says which parts of GET /system/df to compute.
type DiskUsageOptions struct {
	Containers, Images, Volumes, BuildCache bool
}

// Prune serves POST /images/prune and GET /system/df.
type Prune interface {
	ImagesPrune(ctx context.Context, f filters.Args) (*imagetypes.PruneReport, error)
	SystemDiskUsage(ctx context.Context, opts DiskUsageOptions) (*types.DiskUsage, error)
}
