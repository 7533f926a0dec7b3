package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distribution/reference"
	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/pkg/stringid"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/builder/dockerfile"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/distribution"
	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
)

// The daemon's side of builds and commits: it implements the builder's
// Backend with its own create/start/wait path and the image store, and
// otherwise only orchestrates (builder/dockerfile does the work).

// runtimeMountpoints are what the runtime may create in a container's
// writable layer to mount on (the network files, the API filesystems):
// a commit leaves them out when they are empty, as Docker's init layer
// does.
var runtimeMountpoints = []string{
	"etc/hostname", "etc/hosts", "etc/resolv.conf",
	"proc", "sys", "dev/pts", "dev/shm", "dev/mqueue", "dev/console", "dev",
}

// ImageBuildPrepare unpacks the context and parses the Dockerfile of a
// POST /build; its errors are the request's.
func (d *Daemon) ImageBuildPrepare(ctx context.Context, opts dockerfile.Options, src io.Reader) (backend.Build, error) {
	if opts.Platform != "" {
		p, err := platform.Parse(opts.Platform)
		if err != nil {
			return nil, err
		}
		if p.OS != "linux" {
			return nil, errdefs.InvalidParameter(fmt.Errorf("platform %q is not supported: this engine builds linux images", opts.Platform))
		}
	}
	tmp := filepath.Join(d.cfg.Root, "builder")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	b, err := dockerfile.Prepare(ctx, &buildBackend{d: d, auth: opts.AuthConfigs}, opts, src, tmp)
	if err != nil {
		return nil, err
	}
	return b, nil
}

type buildBackend struct {
	d    *Daemon
	auth map[string]registry.AuthConfig // X-Registry-Config, by registry
}

// PullImage pulls FROM's image through the registry service, as
// `docker pull` would (a name without tag is :latest, never every tag),
// with the credentials the client sent for that registry.
func (b *buildBackend) PullImage(ctx context.Context, ref, platform string, out io.Writer) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %w", err))
	}
	named = reference.TagNameOnly(named)
	return b.d.registry.Pull(ctx, distribution.PullOptions{
		FromImage: named.String(),
		Platform:  platform,
		Auth:      authFor(b.auth, reference.Domain(named)),
	}, out)
}

// authFor picks a registry's credentials from the CLI's map, whose keys
// are host names, URLs, or Docker Hub's legacy index URL.
func authFor(m map[string]registry.AuthConfig, domain string) registry.AuthConfig {
	if len(m) == 0 {
		return registry.AuthConfig{}
	}
	if domain == "docker.io" {
		for _, k := range []string{"https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io"} {
			if ac, ok := m[k]; ok {
				return ac
			}
		}
		return registry.AuthConfig{}
	}
	for k, ac := range m {
		h := strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
		if i := strings.Index(h, "/"); i >= 0 {
			h = h[:i]
		}
		if h == domain {
			return ac
		}
	}
	return registry.AuthConfig{}
}

func toBuildImage(img *image.Image) (*dockerfile.Image, error) {
	cfg := &dockerfile.Config{}
	if err := json.Unmarshal(img.RawConfig, cfg); err != nil {
		return nil, fmt.Errorf("image %s: %w", img.ID, err)
	}
	return &dockerfile.Image{ID: img.ID.String(), Config: cfg}, nil
}

func (b *buildBackend) GetImage(ctx context.Context, ref string) (*dockerfile.Image, error) {
	img, err := b.d.images.Get(ref)
	if err != nil {
		return nil, err
	}
	return toBuildImage(img)
}

func (b *buildBackend) ImageChildren(ctx context.Context, id string) ([]*dockerfile.Image, error) {
	var out []*dockerfile.Image
	for _, c := range b.d.images.Children(digest.Digest(id)) {
		img, err := b.d.images.Get(c.String())
		if err != nil {
			continue
		}
		bi, err := toBuildImage(img)
		if err != nil {
			continue
		}
		out = append(out, bi)
	}
	return out, nil
}

func (b *buildBackend) CreateContainer(ctx context.Context, opts dockerfile.ContainerOptions) (string, error) {
	cfg := *opts.Config
	cfg.Image = opts.Image
	mode := opts.NetworkMode
	if mode == "" || mode == "bridge" {
		mode = "default"
	}
	// No init system profile during a build, whatever the command: a
	// RUN that writes /run leaves it in the image (brief 3.2).
	resp, err := b.d.ContainerCreate(ctx, backend.CreateParams{
		Config:     &cfg,
		HostConfig: &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(mode)},
		InitSystem: buildInitSystem,
	})
	if err != nil {
		return "", err
	}
	return resp.ID, nil
}

// buildInitSystem asks create for no init profile at all (not even the
// automatic systemd one for an init command).
const buildInitSystem = "none"

func (b *buildBackend) RunContainer(ctx context.Context, id string, out io.Writer) (int, error) {
	d := b.d
	wait, err := d.ContainerWait(ctx, id, containertypes.WaitConditionNextExit)
	if err != nil {
		return -1, err
	}
	p := &pendingAttach{ctx: ctx, streams: execdriver.Streams{Stdout: out, Stderr: out}, done: make(chan error, 1)}
	d.mu.Lock()
	d.pending[id] = append(d.pending[id], p)
	d.mu.Unlock()
	if err := d.ContainerStart(ctx, id); err != nil {
		d.dropPending(id, p)
		return -1, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		b.kill(id)
		return -1, ctx.Err()
	}
	select {
	case resp := <-wait:
		if resp.Error != nil && resp.Error.Message != "" && resp.StatusCode == 0 {
			return -1, errors.New(resp.Error.Message)
		}
		return int(resp.StatusCode), nil
	case <-ctx.Done():
		b.kill(id)
		return -1, ctx.Err()
	}
}

// kill ends a RUN whose client went away.
func (b *buildBackend) kill(id string) {
	c, err := b.d.containers.Get(id)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	b.d.killAndWait(ctx, c)
}

func (b *buildBackend) RemoveContainer(ctx context.Context, id string) error {
	return b.d.ContainerRemove(ctx, id, containertypes.RemoveOptions{Force: true})
}

func (b *buildBackend) CreateLayer(ctx context.Context, imageID string) (string, string, error) {
	id := "build-" + stringid.GenerateRandomID()
	if imageID == "" {
		return "", "", errdefs.NotImplemented(fmt.Errorf("a step on scratch needs an image"))
	}
	if err := b.d.images.CreateRWLayer(id, digest.Digest(imageID)); err != nil {
		return "", "", err
	}
	rootfs, err := b.d.images.Mount(id)
	if err != nil {
		b.d.images.RemoveRWLayer(id)
		return "", "", err
	}
	return id, rootfs, nil
}

func (b *buildBackend) RemoveLayer(ctx context.Context, id string) error {
	return b.d.images.RemoveRWLayer(id)
}

func (b *buildBackend) Commit(ctx context.Context, opts dockerfile.CommitOptions) (string, error) {
	img, err := b.d.images.Commit(ctx, image.CommitOptions{
		Parent:      digest.Digest(opts.Parent),
		ContainerID: opts.Layer,
		Config:      configWithRootFS(opts.Config),
		Mountpoints: runtimeMountpoints,
	})
	if err != nil {
		return "", err
	}
	return img.ID.String(), nil
}

// configWithRootFS completes a config with its layers; a step that
// changed nothing (no layer added) is an empty_layer in the history.
func configWithRootFS(cfg *dockerfile.Config) func([]digest.Digest) ([]byte, error) {
	parentLayers := len(cfg.RootFS.DiffIDs)
	return func(diffIDs []digest.Digest) ([]byte, error) {
		cfg.RootFS = ocispec.RootFS{Type: "layers", DiffIDs: diffIDs}
		if cfg.RootFS.DiffIDs == nil {
			cfg.RootFS.DiffIDs = []digest.Digest{}
		}
		if n := len(cfg.History); n > 0 && len(diffIDs) == parentLayers {
			cfg.History[n-1].EmptyLayer = true
		}
		return json.Marshal(cfg)
	}
}

func (b *buildBackend) TagImage(ctx context.Context, id, ref string) error {
	return b.d.images.Tag(id, ref)
}

// ContainerCommit serves POST /commit: the container's writable layer
// becomes a layer on top of its image; the request's config, with the
// changes (Dockerfile instructions) applied, is filled from the
// container's.
func (d *Daemon) ContainerCommit(ctx context.Context, p backend.CommitParams) (string, error) {
	c, err := d.containers.Get(p.Container)
	if err != nil {
		return "", err
	}
	c.Lock()
	ccfg := *c.Config
	imageID := c.ImageID
	c.Unlock()
	parent, err := d.images.Get(imageID)
	if err != nil {
		return "", err
	}
	base, err := toBuildImage(parent)
	if err != nil {
		return "", err
	}
	// Without a config in the request the changes apply to the
	// container's own (so "ENV PATH=/x:$PATH" sees its PATH), as Docker.
	var user dockerfile.Config
	if p.Config != nil {
		user.Config = imageConfigFromContainer(p.Config)
	} else {
		user.Config = imageConfigFromContainer(&ccfg)
	}
	if err := dockerfile.ApplyChanges(&user.Config, p.Changes); err != nil {
		return "", err
	}
	newCfg := base.Config
	newCfg.Config = user.Config
	mergeCommitConfig(&newCfg.Config, imageConfigFromContainer(&ccfg))
	now := time.Now().UTC()
	newCfg.Created = &now
	newCfg.Comment = p.Comment
	if p.Author != "" {
		newCfg.Author = p.Author
	}
	argv := append(append([]string{}, ccfg.Entrypoint...), ccfg.Cmd...)
	newCfg.History = append(newCfg.History, ocispec.History{Created: &now, CreatedBy: strings.Join(argv, " "),
		Author: p.Author, Comment: p.Comment})
	var tags []string
	if p.Repo != "" {
		ref := p.Repo
		if p.Tag != "" {
			ref += ":" + p.Tag
		}
		tags = []string{ref}
	} else if p.Tag != "" {
		return "", errdefs.InvalidParameter(fmt.Errorf("tag %q given without a repository", p.Tag))
	}
	img, err := d.images.Commit(ctx, image.CommitOptions{
		Parent:      parent.ID,
		ContainerID: c.ID,
		Config:      configWithRootFS(newCfg),
		Tags:        tags,
		Mountpoints: runtimeMountpoints,
	})
	if err != nil {
		return "", err
	}
	imageRef := ""
	if len(tags) > 0 {
		if named, err := reference.ParseNormalizedNamed(tags[0]); err == nil {
			imageRef = reference.FamiliarString(reference.TagNameOnly(named))
		}
	}
	d.containerEvent(c, eventtypes.ActionCommit, map[string]string{"comment": p.Comment, "imageID": img.ID.String(), "imageRef": imageRef})
	return img.ID.String(), nil
}

// ImageHistory serves GET /images/{name}/history.
func (d *Daemon) ImageHistory(ctx context.Context, name string) ([]*imagetypes.HistoryResponseItem, error) {
	return d.images.History(name)
}
