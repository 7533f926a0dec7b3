package backend

import (
	"context"
	"io"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// Events serves GET /events.
type Events interface {
	// SubscribeEvents returns the kept events between since and until
	// that pass f, a channel of those to come, and a function ending the
	// subscription; an InvalidParameter error for a filter it does not
	// know.
	SubscribeEvents(since, until time.Time, f filters.Args) ([]eventtypes.Message, <-chan eventtypes.Message, func(), error)
}

// ContainerRuntime serves what observes and changes a running container:
// pause, rename, update, top, stats, changes, prune.
type ContainerRuntime interface {
	ContainerPause(ctx context.Context, name string) error
	ContainerUnpause(ctx context.Context, name string) error
	ContainerRename(ctx context.Context, oldName, newName string) error
	ContainerUpdate(ctx context.Context, name string, cfg *containertypes.UpdateConfig) (containertypes.UpdateResponse, error)
	ContainerTop(ctx context.Context, name, psArgs string) (*containertypes.TopResponse, error)
	// ContainerStats writes the container's stats as JSON objects to w:
	// one with oneShot or !stream, else one a second until ctx is done.
	ContainerStats(ctx context.Context, name string, stream, oneShot bool, w io.Writer) error
	ContainerChanges(ctx context.Context, name string) ([]containertypes.FilesystemChange, error)
	ContainersPrune(ctx context.Context, f filters.Args) (*containertypes.PruneReport, error)
}
