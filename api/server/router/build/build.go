// Package build routes POST /build (the classic builder), POST /commit
// and GET /images/{name}/history.
package build

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/api/types/versions"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/builder/dockerfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Backend is what these routes need: the builder, and inspect to check
// a commit's container first.
type Backend interface {
	backend.Builder
	ContainerInspect(ctx context.Context, name string, size bool) (*backend.ContainerInspect, error)
}

type buildRouter struct{ b Backend }

// New returns the build router.
func New(b Backend) router.Router { return &buildRouter{b: b} }

func (br *buildRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodPost, Path: "/build", Handler: br.build, Body: router.BodyStream},
		{Method: http.MethodPost, Path: "/commit", Handler: br.commit, Body: router.BodyConfig},
		{Method: http.MethodGet, Path: "/images/{name:.*}/history", Handler: br.history},
	}
}

func jsonParam(r *http.Request, name string, v any) error {
	s := r.FormValue(name)
	if s == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid %s: %w", name, err))
	}
	return nil
}

func buildOptions(ctx context.Context, r *http.Request) (dockerfile.Options, error) {
	o := dockerfile.Options{
		Tags:        r.Form["t"],
		Dockerfile:  r.FormValue("dockerfile"),
		Quiet:       httputils.BoolValue(r, "q"),
		NoCache:     httputils.BoolValue(r, "nocache"),
		Pull:        httputils.BoolValue(r, "pull"),
		ForceRemove: httputils.BoolValue(r, "forcerm"),
		Target:      r.FormValue("target"),
		NetworkMode: r.FormValue("networkmode"),
		Platform:    r.FormValue("platform"),
	}
	// Docker removes intermediate containers by default from API 1.32 on.
	if r.FormValue("rm") == "" && versions.GreaterThanOrEqualTo(httputils.VersionFromContext(ctx), "1.32") {
		o.Remove = true
	} else {
		o.Remove = httputils.BoolValue(r, "rm")
	}
	o.AuthConfigs = decodeRegistryConfig(r.Header.Get("X-Registry-Config"))
	if err := jsonParam(r, "buildargs", &o.BuildArgs); err != nil {
		return o, err
	}
	if err := jsonParam(r, "labels", &o.Labels); err != nil {
		return o, err
	}
	if err := jsonParam(r, "cachefrom", &o.CacheFrom); err != nil {
		return o, err
	}
	if v := r.FormValue("version"); v == "2" {
		return o, errdefs.InvalidParameter(fmt.Errorf("buildkit not supported by daemon: use the classic builder (DOCKER_BUILDKIT=0)"))
	}
	if httputils.BoolValue(r, "squash") {
		return o, errdefs.InvalidParameter(fmt.Errorf("squash is only supported with experimental mode"))
	}
	if r.FormValue("remote") != "" {
		return o, errdefs.NotImplemented(fmt.Errorf("remote build contexts (a URL or git repository) are not implemented by this engine: send the context as a tar"))
	}
	return o, nil
}

// decodeRegistryConfig reads X-Registry-Config (base64url JSON of the
// CLI's credentials by registry). As with X-Registry-Auth, one that does
// not decode is anonymous: the registry decides whether that is enough.
func decodeRegistryConfig(h string) map[string]registry.AuthConfig {
	if h == "" {
		return nil
	}
	var raw []byte
	for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.StdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(h); err == nil {
			raw = b
			break
		}
	}
	var m map[string]registry.AuthConfig
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	return m
}

// flushWriter flushes every message so the client sees each step as it
// happens.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// build is POST /build. What goes wrong before the build starts (a bad
// parameter, an unreadable context, a Dockerfile that does not parse) is
// the response's status; what goes wrong later is an error message in
// the stream, as in Docker.
func (br *buildRouter) build(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	opts, err := buildOptions(ctx, r)
	if err != nil {
		return err
	}
	b, err := br.b.ImageBuildPrepare(ctx, opts, r.Body)
	if err != nil {
		return err
	}
	defer b.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = b.Run(ctx, flushWriter{w})
	return nil
}

func (br *buildRouter) commit(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var cfg *containertypes.Config
	if err := httputils.ReadJSON(r, &cfg, true); err != nil {
		return err
	}
	name := r.FormValue("container")
	if _, err := br.b.ContainerInspect(ctx, name, false); err != nil {
		return err
	}
	pause := true
	if v := r.FormValue("pause"); v != "" {
		pause = httputils.BoolValue(r, "pause")
	}
	id, err := br.b.ContainerCommit(ctx, backend.CommitParams{
		Container: name,
		Repo:      r.FormValue("repo"),
		Tag:       r.FormValue("tag"),
		Comment:   r.FormValue("comment"),
		Author:    r.FormValue("author"),
		Pause:     pause,
		Changes:   splitChanges(r.Form["changes"]),
		Config:    cfg,
	})
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusCreated, map[string]string{"Id": id})
}

// splitChanges: each changes value may hold several instructions, one per
// line.
func splitChanges(in []string) []string {
	var out []string
	for _, c := range in {
		for _, line := range strings.Split(c, "\n") {
			if strings.TrimSpace(line) != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

func (br *buildRouter) history(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	h, err := br.b.ImageHistory(ctx, vars["name"])
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, h)
}
