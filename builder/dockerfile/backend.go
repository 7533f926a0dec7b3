// Package dockerfile is the classic builder (`POST /build`, what the
// stock CLI uses with DOCKER_BUILDKIT=0, docker-py and docker-compose
// 1.29): it parses a Dockerfile with buildkit's parser, runs each
// instruction through a small Backend the daemon implements (containers
// for RUN, scratch layers for COPY/ADD, commits for every step), keeps
// Docker's layer cache (parent image + the step's command line, and a
// checksum of the sources for COPY/ADD) and streams Docker's JSON
// messages. The package knows nothing of the daemon.
package dockerfile

import (
	"context"
	"io"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/registry"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
)

// Config is an image config as the classic builder writes it: Docker's
// OCI config with its extensions, and the legacy top-level comment.
type Config struct {
	dockerspec.DockerOCIImage
	Comment string `json:"comment,omitempty"`
}

// Image is a local image: its ID ("sha256:...") and decoded config.
type Image struct {
	ID     string
	Config *Config
}

// ContainerOptions says how to create a RUN step's container.
type ContainerOptions struct {
	// Image is the image ID the container starts from.
	Image string
	// Config is the complete process config (the builder merges nothing
	// in from the image itself): Entrypoint+Cmd, Env, User, WorkingDir.
	Config *containertypes.Config
	// NetworkMode is "default", "none" or "host".
	NetworkMode string
}

// CommitOptions describes one step's image.
type CommitOptions struct {
	// Parent is the image the step started from; "" for scratch.
	Parent string
	// Layer is a container or scratch layer whose changes become the new
	// top layer; "" for a config-only step.
	Layer string
	// Config is the new image's config; its RootFS is filled in.
	Config *Config
}

// Backend is what the builder needs from the engine.
type Backend interface {
	// GetImage finds a local image by reference or ID; a missing image is
	// an errdefs.NotFound error.
	GetImage(ctx context.Context, ref string) (*Image, error)
	// ImageChildren lists the images built directly on top of id (the
	// candidates for the layer cache).
	ImageChildren(ctx context.Context, id string) ([]*Image, error)
	// CreateContainer makes (does not start) a container; it returns its
	// ID, which also names its writable layer for Commit.
	CreateContainer(ctx context.Context, opts ContainerOptions) (string, error)
	// RunContainer starts the container, copies its output to out while
	// it runs and returns its exit code once it has exited.
	RunContainer(ctx context.Context, id string, out io.Writer) (int, error)
	// RemoveContainer deletes the container and its writable layer.
	RemoveContainer(ctx context.Context, id string) error
	// CreateLayer makes a writable layer on top of an image ("" for
	// scratch) and mounts it, for COPY and ADD to write into.
	CreateLayer(ctx context.Context, image string) (id, rootfs string, err error)
	// RemoveLayer unmounts and deletes a layer made by CreateLayer.
	RemoveLayer(ctx context.Context, id string) error
	// Commit registers the step's image and returns its ID.
	Commit(ctx context.Context, opts CommitOptions) (string, error)
	// TagImage points ref at the image id.
	TagImage(ctx context.Context, id, ref string) error
}

// Puller is implemented by a Backend that can fetch an image from a
// registry (FROM of an image not present locally, and --pull). out takes
// the pull's JSON progress messages.
type Puller interface {
	PullImage(ctx context.Context, ref, platform string, out io.Writer) error
}

// Options are POST /build's parameters that the daemon side reads.
type Options struct {
	Tags        []string
	Dockerfile  string
	Quiet       bool
	NoCache     bool
	Pull        bool
	Remove      bool
	ForceRemove bool
	BuildArgs   map[string]*string
	Labels      map[string]string
	Target      string
	NetworkMode string
	Platform    string
	// AuthConfigs are X-Registry-Config's credentials, by registry.
	AuthConfigs map[string]registry.AuthConfig
	CacheFrom   []string
}
