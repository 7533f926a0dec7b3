// Package libnetwork is the engine's container networking: the controller
// the daemon calls by container ID (controller.go: networks, Join, Leave,
// Restore, connect and disconnect), over the default and user-defined
// bridges (bridge/), their address leases (ipam/), published ports
// (portmap/), the embedded DNS server (resolver/) and the containers'
// network namespaces (netns/).
package libnetwork

import "github.com/sdengine/engine/libnetwork/types"

// Endpoint is a container's attachment to a bridge network, kept in the
// container's record so that a restarted daemon knows what a running
// container holds.
type Endpoint = types.Endpoint

// PortBinding is one published port.
type PortBinding = types.PortBinding
