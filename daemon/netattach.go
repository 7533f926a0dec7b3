package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Networking is libnetwork's controller (d.net): the daemon hands it
// what a container's record asks for when the container starts (Join),
// stops (Leave) or kept running across a restart (Restore), and keeps
// what it returns in the record (Container.Network, Networks, the links'
// environment and hosts).

// newNetworkController makes the default bridge (unless --bridge none)
// and the user-defined networks.
func newNetworkController(cfg *config.Config, d *Daemon) (*libnetwork.Controller, error) {
	return libnetwork.New(libnetwork.Config{
		Root:           cfg.Root,
		ExecRoot:       cfg.ExecRoot,
		BridgeDisabled: cfg.BridgeDisabled(),
		Bridge:         cfg.Bridge,
		BIP:            cfg.BIP,
		FixedCIDR:      cfg.FixedCIDR,
		IPv6:           cfg.IPv6,
		FixedCIDRv6:    cfg.FixedCIDRv6,
		MTU:            cfg.MTU,
		IPForward:      cfg.IPForwardEnabled(),
		IPTables:       cfg.IPTablesEnabled(),
		HostResolvConf: cfg.HostResolvConf,
		Started:        d.started,
		Events:         d.networkEvents,
	})
}

func sandboxKey(c *container.Container) string {
	if c.Network != nil {
		return c.Network.SandboxKey
	}
	return ""
}

// attachment is what c's record keeps of the network.
func attachment(c *container.Container) libnetwork.Attachment {
	return libnetwork.Attachment{Network: c.Network, Networks: c.Networks}
}

// containerEndpoints are c's endpoints: the first network's, then the
// others by name. The caller holds c's lock.
func containerEndpoints(c *container.Container) []*libnetwork.Endpoint {
	return attachment(c).Endpoints()
}

// joinRequest is what c's record asks of the network; links are its
// legacy links, resolved (joinLinks).
func joinRequest(c *container.Container, links []libnetwork.LinkedContainer) libnetwork.JoinRequest {
	//lint:ignore SA1019 older clients still set the container's MAC address in its config
	mac := c.Config.MacAddress
	return libnetwork.JoinRequest{
		ContainerID:     c.ID,
		Name:            c.Name,
		Hostname:        c.Config.Hostname,
		NetworkMode:     string(c.HostConfig.NetworkMode),
		EndpointsConfig: c.NetworkConfig,
		MacAddress:      mac,
		PortBindings:    c.HostConfig.PortBindings,
		ExposedPorts:    c.Config.ExposedPorts,
		PublishAllPorts: c.HostConfig.PublishAllPorts,
		DNS:             c.HostConfig.DNS,
		Links:           c.HostConfig.Links,
		LegacyLinks:     links,
	}
}

// connectNetwork attaches c at its start: its links, its namespace, its
// endpoints (libnetwork's Join). The caller holds c's lock and calls
// disconnectNetwork if the start fails later.
func (d *Daemon) connectNetwork(c *container.Container) error {
	c.LinkEnv, c.LinkHosts = nil, nil
	links, err := d.joinLinks(c)
	if err != nil {
		return err
	}
	res, err := d.net.Join(context.Background(), joinRequest(c, links))
	if err != nil {
		return err
	}
	c.LinkEnv, c.LinkHosts = res.LinkEnv, res.LinkHosts
	c.Network, c.Networks = res.Network, res.Networks
	return nil
}

// disconnectNetwork releases what connectNetwork gave c (or what its
// record says it held). The caller holds c's lock.
func (d *Daemon) disconnectNetwork(c *container.Container) {
	d.net.Leave(c.ID, string(c.HostConfig.NetworkMode), attachment(c))
	c.Network, c.Networks = nil, nil
}

// restoreNetwork takes back the networking of a container that kept
// running across a daemon restart. The caller holds c's lock.
func (d *Daemon) restoreNetwork(c *container.Container) {
	d.net.Restore(joinRequest(c, nil), attachment(c))
}

// hostResolvConf is the host's resolv.conf (--host-resolv-conf names
// another file, for tests).
func (d *Daemon) hostResolvConf() string { return d.net.HostResolvConf() }

// usesEmbeddedDNS reports whether c's resolv.conf names the embedded
// server: it is on a user-defined network.
func (d *Daemon) usesEmbeddedDNS(c *container.Container) bool { return d.net.UsesEmbeddedDNS(c.ID) }

// validateNetworking refuses at create a network mode or endpoint that
// cannot be (libnetwork's checks).
func (d *Daemon) validateNetworking(cfg *containertypes.Config, hc *containertypes.HostConfig, nc *network.NetworkingConfig) error {
	return d.net.ValidateNetworking(cfg, hc, nc)
}

// networkOptions sets the container's network namespace in o: the one the
// bridge made for it, or the one of the container it shares (container:X).
// For container:X it returns the donor's record directory, whose network
// files the container shares.
func (d *Daemon) networkOptions(c *container.Container, o *oci.SpecOptions) error {
	mode := c.HostConfig.NetworkMode
	switch {
	case c.Network != nil:
		o.NetNS, o.NetNSOwned = c.Network.SandboxKey, true
	case mode.IsContainer():
		st, err := d.networkDonor(c)
		if err != nil {
			return err
		}
		switch {
		case st.NetworkMode.IsHost():
			o.NetworkMode = "host"
		case st.SandboxKey != "":
			o.NetNS = st.SandboxKey
		default:
			o.NetNS = nsFile(st.Pid, "net")
		}
	}
	return nil
}

// networkDonor is the running container whose network c shares.
func (d *Daemon) networkDonor(c *container.Container) (donorState, error) {
	ref := c.HostConfig.NetworkMode.ConnectedContainer()
	other, err := d.containers.Get(ref)
	if err != nil {
		return donorState{}, err
	}
	st, err := peek(c, other)
	if err != nil {
		return donorState{}, err
	}
	if !st.Running {
		return donorState{}, errdefs.Conflict(fmt.Errorf("cannot join network namespace of a non running container: %s", st.ID))
	}
	return st, nil
}

// endpointsConfig is the copy of create's EndpointsConfig a container's
// record keeps.
func endpointsConfig(nc *network.NetworkingConfig) map[string]*network.EndpointSettings {
	if nc == nil || len(nc.EndpointsConfig) == 0 {
		return nil
	}
	out := map[string]*network.EndpointSettings{}
	for name, es := range nc.EndpointsConfig {
		if es == nil {
			es = &network.EndpointSettings{}
		}
		out[name] = es.Copy()
	}
	return out
}

// donorNetworkFiles copies the network files of the container whose
// network c shares (Docker shares its files; a copy keeps each
// container's files its own to remove). It returns the donor's hostname.
func (d *Daemon) donorNetworkFiles(c *container.Container) (string, error) {
	st, err := d.networkDonor(c)
	if err != nil {
		return "", err
	}
	var hostname string
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		b, err := os.ReadFile(filepath.Join(st.Root, f))
		if err != nil {
			return "", fmt.Errorf("network files of container %s: %w", st.ID, err)
		}
		if f == "hostname" {
			hostname = strings.TrimSpace(string(b))
		}
		if err := os.WriteFile(c.File(f), b, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", f, err)
		}
	}
	return hostname, nil
}
