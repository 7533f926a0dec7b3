package container

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/api/server/httputils"
)

// pathStatHeader is where Docker puts the stat of the path an archive
// request names: base64 of its JSON.
const pathStatHeader = "X-Docker-Container-Path-Stat"

func setPathStat(w http.ResponseWriter, st *containertypes.PathStat) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	w.Header().Set(pathStatHeader, base64.StdEncoding.EncodeToString(b))
	return nil
}

func (c *containerRouter) archiveHead(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	st, err := c.b.ContainerStatPath(ctx, vars["name"], r.Form.Get("path"))
	if err != nil {
		return err
	}
	if err := setPathStat(w, st); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// archiveGet streams the path as a tar; the stat header and the status go
// out with the first bytes, so a missing path is still an error status.
func (c *containerRouter) archiveGet(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	return c.b.ContainerArchivePath(ctx, vars["name"], r.Form.Get("path"), func(st *containertypes.PathStat) io.Writer {
		_ = setPathStat(w, st)
		w.Header().Set("Content-Type", "application/x-tar")
		w.WriteHeader(http.StatusOK)
		return w
	})
}

func (c *containerRouter) archivePut(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	err := c.b.ContainerExtractToDir(ctx, vars["name"], r.Form.Get("path"),
		httputils.BoolValue(r, "copyUIDGID"), httputils.BoolValue(r, "noOverwriteDirNonDir"), r.Body)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
