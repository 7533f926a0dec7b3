package daemon

import (
	"context"
	"io"

	"github.com/docker/docker/api/types/registry"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/distribution"
)

// ImagePull serves `docker pull`.
func (d *Daemon) ImagePull(ctx context.Context, p backend.PullParams, out io.Writer) error {
	return d.registry.Pull(ctx, distribution.PullOptions{FromImage: p.FromImage, Tag: p.Tag, Platform: p.Platform, Auth: p.Auth}, out)
}

// ImagePush serves `docker push`.
func (d *Daemon) ImagePush(ctx context.Context, p backend.PushParams, out io.Writer) error {
	return d.registry.Push(ctx, distribution.PushOptions{Name: p.Name, Tag: p.Tag, Auth: p.Auth}, out)
}

// AuthLogin serves `docker login`: it checks the credentials against the
// registry; the CLI stores them.
func (d *Daemon) AuthLogin(ctx context.Context, ac registry.AuthConfig) (registry.AuthenticateOKBody, error) {
	status, err := d.registry.Login(ctx, ac)
	if err != nil {
		return registry.AuthenticateOKBody{}, err
	}
	return registry.AuthenticateOKBody{Status: status}, nil
}

// ImageSearch serves `docker search`.
func (d *Daemon) ImageSearch(ctx context.Context, p backend.SearchParams) ([]registry.SearchResult, error) {
	return d.registry.Search(ctx, distribution.SearchOptions{Term: p.Term, Limit: p.Limit, Filters: p.Filters, Auth: p.Auth})
}
