// Package types holds the records libnetwork's parts exchange: a
// container's endpoint and its published ports. They live below package
// libnetwork so that the drivers (bridge, portmap) and the controller
// above them can share them without an import cycle.
package types

// Endpoint is a container's attachment to a bridge network.
type Endpoint struct {
	Network string `json:"network"`
	// NetworkID is the user-defined network's ID ("" on the default bridge).
	NetworkID string `json:"network_id,omitempty"`
	// IfName is the interface in the container (eth0, eth1, ...).
	IfName string `json:"ifname,omitempty"`
	// Aliases are the names the container answers to on this network
	// (--network-alias, connect --alias), besides its name and short ID.
	Aliases    []string `json:"aliases,omitempty"`
	EndpointID string   `json:"endpoint_id"`
	IPAddress  string   `json:"ip"`
	PrefixLen  int      `json:"prefix_len"`
	Gateway    string   `json:"gateway"`
	// The IPv6 address, its prefix length and gateway, on a network with
	// IPv6 (empty otherwise).
	IPv6Address   string `json:"ip6,omitempty"`
	IPv6PrefixLen int    `json:"prefix_len6,omitempty"`
	IPv6Gateway   string `json:"gateway6,omitempty"`
	// GwPriority: of the container's endpoints, the one with the highest
	// gives the default route (per address family; a tie goes to the
	// network whose name sorts first).
	GwPriority int `json:"gw_priority,omitempty"`
	// Internal: on an --internal network, which never gives a route out.
	Internal   bool   `json:"internal,omitempty"`
	MacAddress string `json:"mac"`
	// HostVeth is the host's end of the container's veth pair.
	HostVeth string `json:"host_veth"`
	// SandboxKey is the network namespace's bind mount on the exec root.
	SandboxKey string `json:"sandbox_key"`
	// Ports are the published ports as they were bound.
	Ports []PortBinding `json:"ports,omitempty"`
}

// PortBinding is one published port: HostIP:HostPort on the host leads to
// ContainerPort of the container, for Proto (tcp or udp).
type PortBinding struct {
	Proto         string `json:"proto"`
	HostIP        string `json:"host_ip"`
	HostPort      uint16 `json:"host_port"`
	ContainerPort uint16 `json:"container_port"`
}
