package image

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/router/distribution"
	"github.com/sdengine/engine/pkg/errdefs"
)

// pull is POST /images/create?fromImage=...: the backend must also serve
// registries (backend.Distribution).
func (i *imageRouter) pull(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	d, ok := i.b.(backend.Distribution)
	if !ok {
		return errdefs.NotImplemented(fmt.Errorf("POST /images/create?fromImage (pull) is not implemented by this engine"))
	}
	p := backend.PullParams{
		FromImage: r.FormValue("fromImage"),
		Tag:       r.FormValue("tag"),
		Platform:  r.FormValue("platform"),
		Auth:      distribution.DecodeAuth(r.Header.Get("X-Registry-Auth")),
	}
	return distribution.Stream(w, func(out *distribution.ProgressWriter) error { return d.ImagePull(ctx, p, out) })
}
