package backend

import (
	"context"
	"io"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/registry"
)

// SearchParams is a decoded GET /images/search.
type SearchParams struct {
	Term    string
	Limit   int
	Filters filters.Args
	Auth    registry.AuthConfig
}

// PullParams is a decoded POST /images/create?fromImage=...
type PullParams struct {
	FromImage, Tag, Platform string
	Auth                     registry.AuthConfig
}

// PushParams is a decoded POST /images/{name}/push.
type PushParams struct {
	Name, Tag string
	Auth      registry.AuthConfig
}

// Distribution serves what talks to registries: pull, push, login and search.
type Distribution interface {
	ImagePull(ctx context.Context, p PullParams, out io.Writer) error
	ImagePush(ctx context.Context, p PushParams, out io.Writer) error
	AuthLogin(ctx context.Context, ac registry.AuthConfig) (registry.AuthenticateOKBody, error)
	ImageSearch(ctx context.Context, p SearchParams) ([]registry.SearchResult, error)
}
