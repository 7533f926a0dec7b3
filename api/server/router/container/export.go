package container

import (
	"context"
	"net/http"
)

// export streams the container's filesystem as a tar. The status line goes
// out with the first bytes, so a container that is missing or cannot be
// mounted is still an error status, not an empty 200; an error midway can
// only cut the stream short.
func (c *containerRouter) export(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	w.Header().Set("Content-Type", "application/x-tar")
	return c.b.ContainerExport(ctx, vars["name"], w)
}
