// Package volume routes the volume endpoints whose requests are checked
// before the answer that volumes are not built yet.
package volume

import (
	"context"
	"net/http"

	volumetypes "github.com/docker/docker/api/types/volume"

	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
)

type volumeRouter struct{}

// New returns the volume router.
func New() router.Router { return volumeRouter{} }

func (volumeRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodPost, Path: "/volumes/create", Handler: create},
	}
}

// create is not built: a malformed body is a 400 as in Docker, anything
// else (an empty body too, which asks Docker for an anonymous volume) a
// 501.
func create(_ context.Context, _ http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var req volumetypes.CreateOptions
	if err := httputils.ReadJSON(r, &req, true); err != nil {
		return err
	}
	return httputils.NotImplemented(r)
}
