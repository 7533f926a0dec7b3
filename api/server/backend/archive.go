package backend

import (
	"context"
	"io"

	containertypes "github.com/docker/docker/api/types/container"
)

// ContainerArchive serves /containers/{id}/archive (docker cp).
type ContainerArchive interface {
	ContainerStatPath(ctx context.Context, name, path string) (*containertypes.PathStat, error)
	// ContainerArchivePath calls start with the path's stat before it
	// writes the tar to what start returns.
	ContainerArchivePath(ctx context.Context, name, path string, start func(*containertypes.PathStat) io.Writer) error
	ContainerExtractToDir(ctx context.Context, name, path string, copyUIDGID, noOverwriteDirNonDir bool, content io.Reader) error
}
