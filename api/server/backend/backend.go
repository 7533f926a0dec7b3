// Package backend declares what the API routers need from the engine. The
// daemon implements these interfaces; the routers know nothing else of it.
package backend

import (
	"context"
	"io"

	"github.com/docker/docker/api/types"
	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/runconfig"
)

// System serves /_ping, /version and /info.
type System interface {
	SystemInfo(ctx context.Context) (*Info, error)
	SystemVersion(ctx context.Context) types.Version
}

// Info is Docker's system.Info plus this engine's own fields.
type Info struct {
	InfoBase
	// NumberOfHooks counts the executables in the hooks directory, as the
	// daemon sees them (a remote client cannot count them itself).
	NumberOfHooks int `json:"NumberOfDockerHooks"`
}

// Networks serves /networks/...: the builtin networks and the
// user-defined (bridge) ones.
type Networks interface {
	NetworkList(ctx context.Context, f filters.Args) ([]network.Summary, error)
	NetworkInspect(ctx context.Context, ref string) (network.Inspect, error)
	NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error)
	NetworkRemove(ctx context.Context, ref string) error
	NetworkConnect(ctx context.Context, ref, container string, es *network.EndpointSettings) error
	NetworkDisconnect(ctx context.Context, ref, container string, force bool) error
	NetworksPrune(ctx context.Context, f filters.Args) (*network.PruneReport, error)
}

// CreateParams is a decoded POST /containers/create.
type CreateParams struct {
	Name       string
	Config     *containertypes.Config
	HostConfig *containertypes.HostConfig
	Networking *network.NetworkingConfig
	// InitSystem is Config.Init, this engine's extension ("systemd").
	InitSystem string
	Platform   string
	// ReadOnlyNonRecursive is the API before 1.44, whose read-only binds
	// did not cover the mounts below them.
	ReadOnlyNonRecursive bool
	// Pod puts the container in a CRI pod sandbox (package cri); the
	// Docker API never sets it.
	Pod *runconfig.Pod
}

// StreamFunc is called once the request has been validated, to take over
// the connection; it returns where the container's streams go.
type StreamFunc func(tty bool) (stdin io.ReadCloser, stdout, stderr io.Writer, err error)

// AttachConfig is a decoded POST /containers/{id}/attach.
type AttachConfig struct {
	Stdin, Stdout, Stderr bool
	Stream, Logs          bool
	DetachKeys            string
}

// ListOptions is a decoded GET /containers/json.
type ListOptions struct {
	All     bool
	Limit   int
	Size    bool
	Filters filters.Args
}

// Containers serves /containers/... and /exec/...
type Containers interface {
	ContainerRuntime
	ContainerCreate(ctx context.Context, p CreateParams) (containertypes.CreateResponse, error)
	ContainerStart(ctx context.Context, name string) error
	// ContainerStartWithFiles is a start whose first process gets files
	// as its fds 3, 4, ... (api/fdpass); the backend closes them.
	ContainerStartWithFiles(ctx context.Context, name string, files *fdpass.Files) error
	ContainerStop(ctx context.Context, name string, opts containertypes.StopOptions) error
	ContainerRestart(ctx context.Context, name string, opts containertypes.StopOptions) error
	ContainerKill(ctx context.Context, name, signal string) error
	ContainerWait(ctx context.Context, name string, cond containertypes.WaitCondition) (<-chan containertypes.WaitResponse, error)
	ContainerRemove(ctx context.Context, name string, opts containertypes.RemoveOptions) error
	ContainerList(ctx context.Context, opts ListOptions) ([]*containertypes.Summary, error)
	ContainerInspect(ctx context.Context, name string, size bool) (*ContainerInspect, error)
	ContainerLogs(ctx context.Context, name string, opts containertypes.LogsOptions, out StreamFunc) error
	ContainerAttach(ctx context.Context, name string, cfg AttachConfig, out StreamFunc) error
	ContainerResize(ctx context.Context, name string, height, width uint) error
	ContainerExport(ctx context.Context, name string, w io.Writer) error
	ContainerArchive
	ExecCreate(ctx context.Context, name string, cfg *containertypes.ExecOptions) (string, error)
	ExecStart(ctx context.Context, id string, opts containertypes.ExecStartOptions, out StreamFunc) error
	ExecInspect(ctx context.Context, id string) (*ExecInspect, error)
	ExecResize(ctx context.Context, id string, height, width uint) error
}

// ContainerInspect is Docker's inspect body with Config carrying this
// engine's Init extension ("systemd").
type ContainerInspect struct {
	*containertypes.InspectResponse
	Config *ConfigWithInit
}

// ConfigWithInit is container.Config plus Config.Init.
type ConfigWithInit struct {
	*containertypes.Config
	Init string `json:",omitempty"`
}

// ExecInspect is GET /exec/{id}/json.
type ExecInspect struct {
	ID            string
	Running       bool
	ExitCode      *int
	ProcessConfig struct {
		Tty        bool     `json:"tty"`
		Entrypoint string   `json:"entrypoint"`
		Arguments  []string `json:"arguments"`
		Privileged bool     `json:"privileged"`
		User       string   `json:"user"`
	}
	OpenStdin, OpenStderr, OpenStdout bool
	CanRemove                         bool
	ContainerID                       string
	DetachKeys                        string
	Pid                               int
}

// ImportParams is a decoded POST /images/create?fromSrc=...
type ImportParams struct {
	Repo, Tag, Message string
	Changes            []string
	Platform           ocispec.Platform // the zero value is the engine's own
}

// Images serves /images/...
type Images interface {
	ImageList(ctx context.Context, all bool, f filters.Args) ([]*imagetypes.Summary, error)
	// ImageInspect and ImageSave refuse (NotFound) an image that is not of
	// platform, when one is given.
	ImageInspect(ctx context.Context, ref string, platform *ocispec.Platform) (*imagetypes.InspectResponse, error)
	ImageTag(ctx context.Context, source, repo, tag string) error
	ImageDelete(ctx context.Context, ref string, force, prune bool) ([]imagetypes.DeleteResponse, error)
	ImageImport(ctx context.Context, src io.Reader, p ImportParams, out io.Writer) error
	ImageLoad(ctx context.Context, src io.Reader, quiet bool, out io.Writer) error
	ImageSave(ctx context.Context, names []string, platform *ocispec.Platform, out io.Writer) error
}

// Backend is everything the API serves.
type Backend interface {
	System
	Containers
	Images
}
