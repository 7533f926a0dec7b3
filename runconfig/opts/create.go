package opts

import (
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
)

// ContainerConfig is container.Config plus this engine's Init extension.
// The embedded struct's fields are promoted, so it marshals to and from the
// same JSON object as container.Config with one extra "Init" key.
type ContainerConfig struct {
	container.Config
	// Init selects a special PID 1; only InitSystemd is defined.
	Init string `json:"Init,omitempty"`
}

// CreateRequest is the body of POST /containers/create as this engine
// understands it (container.CreateRequest with the extended Config).
type CreateRequest struct {
	*ContainerConfig
	HostConfig       *container.HostConfig     `json:"HostConfig,omitempty"`
	NetworkingConfig *network.NetworkingConfig `json:"NetworkingConfig,omitempty"`
}
