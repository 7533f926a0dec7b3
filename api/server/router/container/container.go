// Package container routes /containers/... and /exec/...
package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/versions"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
)

type containerRouter struct{ b backend.Containers }

// New returns the container and exec router.
func New(b backend.Containers) router.Router { return &containerRouter{b: b} }

func (c *containerRouter) Routes() []router.Route {
	routes := []router.Route{
		{Method: http.MethodGet, Path: "/containers/json", Handler: c.list},
		{Method: http.MethodPost, Path: "/containers/create", Handler: c.create, Body: router.BodyConfig},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/json", Handler: c.inspect},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/logs", Handler: c.logs},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/start", Handler: c.start},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/stop", Handler: c.stop},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/restart", Handler: c.restart},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/kill", Handler: c.kill},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/wait", Handler: c.wait},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/attach", Handler: c.attach},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/resize", Handler: c.resize},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/export", Handler: c.export},
		{Method: http.MethodHead, Path: "/containers/{name:.*}/archive", Handler: c.archiveHead},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/archive", Handler: c.archiveGet},
		{Method: http.MethodPut, Path: "/containers/{name:.*}/archive", Handler: c.archivePut, Body: router.BodyStream},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/exec", Handler: c.execCreate, Body: router.BodyConfig},
		{Method: http.MethodDelete, Path: "/containers/{name:.*}", Handler: c.remove},
		{Method: http.MethodPost, Path: "/exec/{id:.*}/start", Handler: c.execStart},
		{Method: http.MethodPost, Path: "/exec/{id:.*}/resize", Handler: c.execResize},
		{Method: http.MethodGet, Path: "/exec/{id:.*}/json", Handler: c.execInspect},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/update", Handler: c.update, Body: router.BodyConfig},
	}
	return append(routes, c.runtimeRoutes()...)
}

func (c *containerRouter) list(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	limit, err := httputils.IntValue(r, "limit", 0)
	if err != nil {
		return err
	}
	list, err := c.b.ContainerList(ctx, backend.ListOptions{
		All: httputils.BoolValue(r, "all"), Limit: limit, Size: httputils.BoolValue(r, "size"), Filters: f,
	})
	if err != nil {
		return err
	}
	if versions.LessThan(httputils.VersionFromContext(ctx), "1.46") {
		// HostConfig.Annotations is in the list from API 1.46 on.
		for _, s := range list {
			s.HostConfig.Annotations = nil
		}
	}
	return httputils.WriteJSON(w, http.StatusOK, list)
}

// createBody is the create request with this engine's Config.Init
// extension. Config is embedded in the request, so "Init" sits at the top
// level of the JSON object, beside Cmd and Env.
type createBody struct {
	containertypes.CreateRequest
	Init *string `json:"Init,omitempty"`
}

func (c *containerRouter) create(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var body createBody
	if err := httputils.ReadJSON(r, &body, false); err != nil {
		return err
	}
	if body.Config == nil {
		return errdefs.InvalidParameter(fmt.Errorf("config cannot be empty in order to create a container"))
	}
	p := backend.CreateParams{
		Name:       r.FormValue("name"),
		Config:     body.Config,
		HostConfig: body.HostConfig,
		Networking: body.NetworkingConfig,
		Platform:   r.FormValue("platform"),
	}
	if body.Init != nil {
		p.InitSystem = *body.Init
	}
	if p.HostConfig == nil {
		p.HostConfig = &containertypes.HostConfig{}
	}
	// Clients older than 1.40 expect the default IPC mode they knew.
	if v := httputils.VersionFromContext(ctx); v != "" && versions.LessThan(v, "1.40") && p.HostConfig.IpcMode == "" {
		p.HostConfig.IpcMode = containertypes.IPCModeShareable
	}
	if err := versionedCreate(httputils.VersionFromContext(ctx), &p); err != nil {
		return err
	}
	resp, err := c.b.ContainerCreate(ctx, p)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusCreated, resp)
}

// versionedCreate applies to a create request what depends on the API
// version the client speaks, as Docker does: a field newer than the
// client's version is ignored, and what an older version did not allow is
// refused.
func versionedCreate(version string, p *backend.CreateParams) error {
	if version == "" {
		return nil
	}
	// Read-only binds became recursive with API 1.44.
	p.ReadOnlyNonRecursive = versions.LessThan(version, "1.44")
	if versions.LessThan(version, "1.43") {
		// HostConfig.Annotations came with API 1.43.
		p.HostConfig.Annotations = nil
	}
	if versions.LessThan(version, "1.48") {
		// Image mounts came with API 1.48.
		for _, m := range p.HostConfig.Mounts {
			if m.Type == mount.TypeImage {
				return errdefs.InvalidParameter(fmt.Errorf("mount type %q needs API version 1.48 or later (the client speaks %s)", m.Type, version))
			}
		}
	}
	if versions.LessThan(version, "1.44") && p.Networking != nil && len(p.Networking.EndpointsConfig) > 1 {
		names := make([]string, 0, len(p.Networking.EndpointsConfig))
		for n := range p.Networking.EndpointsConfig {
			names = append(names, n)
		}
		sort.Strings(names)
		return errdefs.InvalidParameter(fmt.Errorf("Container cannot be created with multiple network endpoints: %s", strings.Join(names, ", ")))
	}
	return nil
}

func (c *containerRouter) inspect(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	resp, err := c.b.ContainerInspect(ctx, vars["name"], httputils.BoolValue(r, "size"))
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, resp)
}

func (c *containerRouter) start(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	// Clients older than 1.24 could send a HostConfig here; we do not
	// support that, and newer ones send nothing or "{}".
	files, err := passedFiles(ctx, r)
	if err != nil {
		return err
	}
	if files != nil {
		err = c.b.ContainerStartWithFiles(ctx, vars["name"], files)
	} else {
		err = c.b.ContainerStart(ctx, vars["name"])
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// passedFiles reads this engine's extension of start (api/fdpass): the
// descriptors that came with the request for the container's first
// process. Nil when the request does not use it: Docker's start.
func passedFiles(ctx context.Context, r *http.Request) (*fdpass.Files, error) {
	req, ok, err := fdpass.Parse(r.Header)
	if !ok {
		return nil, nil
	}
	if err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	fds, err := httputils.TakeFiles(ctx)
	if err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	files := &fdpass.Files{Request: req, Fds: fds}
	if len(fds) != req.Files {
		files.Close()
		return nil, errdefs.InvalidParameter(fmt.Errorf("%s says %d descriptors, %d came with the request", fdpass.HeaderFiles, req.Files, len(fds)))
	}
	return files, nil
}

func stopOptions(r *http.Request) (containertypes.StopOptions, error) {
	opts := containertypes.StopOptions{Signal: r.FormValue("signal")}
	if t := r.FormValue("t"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return opts, errdefs.InvalidParameter(fmt.Errorf("invalid value for t: %q", t))
		}
		opts.Timeout = &n
	}
	return opts, nil
}

func (c *containerRouter) stop(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	opts, err := stopOptions(r)
	if err != nil {
		return err
	}
	if err := c.b.ContainerStop(ctx, vars["name"], opts); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *containerRouter) restart(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	opts, err := stopOptions(r)
	if err != nil {
		return err
	}
	if err := c.b.ContainerRestart(ctx, vars["name"], opts); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *containerRouter) kill(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := c.b.ContainerKill(ctx, vars["name"], r.FormValue("signal")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *containerRouter) wait(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	cond := containertypes.WaitCondition(r.FormValue("condition"))
	switch cond {
	case "":
		cond = containertypes.WaitConditionNotRunning
	case containertypes.WaitConditionNotRunning, containertypes.WaitConditionNextExit, containertypes.WaitConditionRemoved:
	default:
		return errdefs.InvalidParameter(fmt.Errorf("invalid condition: %q", cond))
	}
	ch, err := c.b.ContainerWait(ctx, vars["name"], cond)
	if err != nil {
		return err
	}
	// Send the headers now: a client waits for them before it starts the
	// container (docker run), and the body follows when the wait ends.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case resp := <-ch:
		return json.NewEncoder(w).Encode(resp)
	case <-ctx.Done():
		return nil
	}
}

func (c *containerRouter) remove(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	opts := containertypes.RemoveOptions{
		RemoveVolumes: httputils.BoolValue(r, "v"),
		RemoveLinks:   httputils.BoolValue(r, "link"),
		Force:         httputils.BoolValue(r, "force"),
	}
	if err := c.b.ContainerRemove(ctx, vars["name"], opts); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *containerRouter) logs(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	opts := containertypes.LogsOptions{
		ShowStdout: httputils.BoolValue(r, "stdout"),
		ShowStderr: httputils.BoolValue(r, "stderr"),
		Timestamps: httputils.BoolValue(r, "timestamps"),
		Follow:     httputils.BoolValue(r, "follow"),
		Since:      r.FormValue("since"),
		Until:      r.FormValue("until"),
		Tail:       r.FormValue("tail"),
		Details:    httputils.BoolValue(r, "details"),
	}
	if !opts.ShowStdout && !opts.ShowStderr {
		return errdefs.InvalidParameter(fmt.Errorf("you must choose at least one stream"))
	}
	return c.b.ContainerLogs(ctx, vars["name"], opts, func(tty bool) (io.ReadCloser, io.Writer, io.Writer, error) {
		// Logs are plain HTTP, not hijacked: stdcopy frames unless tty.
		return logStreams(w, r, tty)
	})
}

func (c *containerRouter) attach(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	cfg := backend.AttachConfig{
		Stdin:      httputils.BoolValue(r, "stdin"),
		Stdout:     httputils.BoolValue(r, "stdout"),
		Stderr:     httputils.BoolValue(r, "stderr"),
		Stream:     httputils.BoolValue(r, "stream"),
		Logs:       httputils.BoolValue(r, "logs"),
		DetachKeys: r.FormValue("detachKeys"),
	}
	// A hijacked connection no longer ends the request's context when the
	// client goes away: the stream does, so that the attach lets go of the
	// shim at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return c.b.ContainerAttach(ctx, vars["name"], cfg, hijacker(w, r, cancel))
}

// hijacker returns a StreamFunc that takes over the connection. When the
// client goes away, the connection is closed and onGone called.
func hijacker(w http.ResponseWriter, r *http.Request, onGone func()) backend.StreamFunc {
	return func(tty bool) (io.ReadCloser, io.Writer, io.Writer, error) {
		s, err := httputils.Hijack(w, r, tty, onGone)
		if err != nil {
			return nil, nil, nil, err
		}
		return &streamCloser{s}, s.Stdout, s.Stderr, nil
	}
}

// streamCloser is the stdin side of a hijacked stream; closing it ends the
// whole connection, which is how the backend says "done".
type streamCloser struct{ s *httputils.Stream }

func (sc *streamCloser) Read(p []byte) (int, error) { return sc.s.Stdin.Read(p) }
func (sc *streamCloser) Close() error               { return sc.s.Close() }

func (c *containerRouter) resize(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	h, wd, err := size(r)
	if err != nil {
		return err
	}
	return c.b.ContainerResize(ctx, vars["name"], h, wd)
}

// size reads a resize request's h and w, each a uint32. The messages are
// Docker's: the value as given and why it is not one ("invalid syntax",
// "value out of range"; a negative number is out of range).
func size(r *http.Request) (uint, uint, error) {
	h, err := dimension(r.FormValue("h"))
	if err != nil {
		return 0, 0, errdefs.InvalidParameter(fmt.Errorf("invalid resize height %q: %w", r.FormValue("h"), err))
	}
	w, err := dimension(r.FormValue("w"))
	if err != nil {
		return 0, 0, errdefs.InvalidParameter(fmt.Errorf("invalid resize width %q: %w", r.FormValue("w"), err))
	}
	return h, w, nil
}

// dimension parses one side of a terminal size; the error is strconv's
// bare reason (strconv.ErrSyntax or strconv.ErrRange), without its
// "strconv.ParseInt: parsing" prefix.
func dimension(s string) (uint, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
			return 0, ne.Err
		}
		return 0, err
	}
	if n < 0 || n > math.MaxUint32 {
		return 0, strconv.ErrRange
	}
	return uint(n), nil
}

func (c *containerRouter) execCreate(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var cfg containertypes.ExecOptions
	if err := httputils.ReadJSON(r, &cfg, false); err != nil {
		return err
	}
	if len(cfg.Cmd) == 0 {
		return errdefs.InvalidParameter(fmt.Errorf("No exec command specified"))
	}
	if !consoleSizeSupported(ctx) {
		cfg.ConsoleSize = nil
	}
	id, err := c.b.ExecCreate(ctx, vars["name"], &cfg)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusCreated, containertypes.ExecCreateResponse{ID: id})
}

func (c *containerRouter) execStart(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var opts containertypes.ExecStartOptions
	if err := httputils.ReadJSON(r, &opts, true); err != nil {
		return err
	}
	// A console size at start needs a terminal on the stream too.
	if !opts.Tty || !consoleSizeSupported(ctx) {
		opts.ConsoleSize = nil
	}
	if opts.Detach {
		if err := c.b.ExecStart(ctx, vars["id"], opts, nil); err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	// A client that goes away loses its connection at once; the process
	// runs on (its exit code is still recorded), its output dropped.
	return c.b.ExecStart(ctx, vars["id"], opts, hijacker(w, r, nil))
}

// consoleSizeSupported: an exec's ConsoleSize came with API 1.42; older
// clients' values are ignored, as Docker does.
func consoleSizeSupported(ctx context.Context) bool {
	v := httputils.VersionFromContext(ctx)
	return v == "" || !versions.LessThan(v, "1.42")
}

func (c *containerRouter) execResize(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	h, wd, err := size(r)
	if err != nil {
		return err
	}
	return c.b.ExecResize(ctx, vars["id"], h, wd)
}

func (c *containerRouter) execInspect(ctx context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	resp, err := c.b.ExecInspect(ctx, vars["id"])
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, resp)
}
