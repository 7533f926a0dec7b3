package backend

import (
	"context"
	"io"

	containertypes "github.com/docker/docker/api/types/container"
	imagetypes "github.com/docker/docker/api/types/image"

	"github.com/sdengine/engine/builder/dockerfile"
)

// Build is a prepared build (context unpacked, Dockerfile parsed).
type Build interface {
	// Run builds, streaming Docker's JSON messages to w.
	Run(ctx context.Context, w io.Writer) (string, error)
	Close()
}

// CommitParams is a decoded POST /commit.
type CommitParams struct {
	Container, Repo, Tag string
	Comment, Author      string
	Pause                bool
	Changes              []string
	Config               *containertypes.Config
}

// Builder serves POST /build, POST /commit and GET /images/{name}/history.
type Builder interface {
	ImageBuildPrepare(ctx context.Context, opts dockerfile.Options, src io.Reader) (Build, error)
	ContainerCommit(ctx context.Context, p CommitParams) (string, error)
	ImageHistory(ctx context.Context, name string) ([]*imagetypes.HistoryResponseItem, error)
}
