package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/pkg/errdefs"
)

// NetworkConnect serves POST /networks/{id}/connect: a running container
// gets an interface on the network at once (its next ethN), a stopped one
// joins it at its next start; either way the record keeps the settings.
func (d *Daemon) NetworkConnect(ctx context.Context, ref, name string, es *network.EndpointSettings) error {
	if ref == "host" || ref == "none" || ref == networkID("host") || ref == networkID("none") {
		return errdefs.InvalidParameter(fmt.Errorf("container cannot be disconnected from host network or connected to host network"))
	}
	n, err := d.resolveNet(ref)
	if err != nil {
		return err
	}
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	if es == nil {
		es = &network.EndpointSettings{}
	}
	c.Lock()
	defer c.Unlock()
	switch mode := c.HostConfig.NetworkMode; {
	case mode == "host", mode.IsContainer():
		return errdefs.InvalidParameter(fmt.Errorf("container sharing network namespace with another container or host cannot be connected to any other network"))
	case mode == "none":
		return errdefs.InvalidParameter(fmt.Errorf("container cannot be connected to multiple networks with one of the networks in private (none) mode"))
	}
	if n.id == "" {
		if es.IPAMConfig != nil && (es.IPAMConfig.IPv4Address != "" || es.IPAMConfig.IPv6Address != "") {
			return errdefs.InvalidParameter(fmt.Errorf("user specified IP address is supported on user defined networks only"))
		}
		if len(es.Aliases) > 0 {
			return errdefs.InvalidParameter(fmt.Errorf("network-scoped alias is supported only for containers in user defined networks"))
		}
	}
	running := c.State.Status == container.StatusRunning || c.State.Status == container.StatusPaused
	for _, ep := range containerEndpoints(c) {
		if ep.Network == n.name {
			return errdefs.Forbidden(fmt.Errorf("endpoint with name %s already exists in network %s", c.Name[1:], n.name))
		}
	}
	if !running {
		if _, ok := c.NetworkConfig[n.name]; ok {
			return errdefs.Forbidden(fmt.Errorf("endpoint with name %s already exists in network %s", c.Name[1:], n.name))
		}
	} else {
		if c.Network == nil || c.Network.SandboxKey == "" {
			return errdefs.Conflict(fmt.Errorf("container %s has no network namespace to connect", c.ID[:12]))
		}
		o, err := attachOptions(c, es, false)
		if err != nil {
			return err
		}
		used := map[string]bool{}
		eps := containerEndpoints(c)
		for _, ep := range eps {
			used[ep.IfName] = true
		}
		for i := 0; ; i++ {
			if name := fmt.Sprintf("eth%d", i); !used[name] {
				o.IfName = name
				break
			}
		}
		o.NetnsPath = c.Network.SandboxKey
		ep, err := n.br.Attach(c.ID, o)
		if err != nil {
			return err
		}
		ep.SandboxKey = o.NetnsPath
		setEndpoint(c, n.name, ep, c.Network.Network == "")
		if err := setGateways(c); err != nil {
			slog.Error("network connect: default routes", "id", c.ID, "network", n.name, "err", err)
		}
		d.registerDNS(c)
		d.endpointEvent(ep, eventtypes.ActionConnect, c.ID)
	}
	if c.NetworkConfig == nil {
		c.NetworkConfig = map[string]*network.EndpointSettings{}
	}
	c.NetworkConfig[n.name] = es.Copy()
	return c.SaveLocked()
}

// NetworkDisconnect serves POST /networks/{id}/disconnect: the container's
// interface on the network goes (while it runs), and the record forgets
// the network.
func (d *Daemon) NetworkDisconnect(ctx context.Context, ref, name string, force bool) error {
	n, nerr := d.resolveNet(ref)
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	c.Lock()
	defer c.Unlock()
	netName := ref
	if nerr == nil {
		netName = n.name
	}
	if c.HostConfig.NetworkMode == "host" && (ref == "host" || ref == networkID("host")) {
		return errdefs.InvalidParameter(fmt.Errorf("container cannot be disconnected from host network or connected to host network"))
	}
	running := c.State.Status == container.StatusRunning || c.State.Status == container.StatusPaused
	if nerr != nil && !(force && !running) {
		return nerr
	}
	if !running {
		if _, ok := c.NetworkConfig[netName]; !ok && string(c.HostConfig.NetworkMode) != netName {
			return fmt.Errorf("container %s is not connected to the network %s", c.ID, netName)
		}
		delete(c.NetworkConfig, netName)
		return c.SaveLocked()
	}
	var ep *libnetwork.Endpoint
	for _, e := range containerEndpoints(c) {
		if e.Network == n.name {
			ep = e
		}
	}
	if ep == nil {
		return errdefs.Forbidden(fmt.Errorf("container %s is not connected to network %s", c.ID, n.name))
	}
	d.unregisterDNS(c, n.id)
	if err := n.br.Detach(c.ID); err != nil {
		slog.Error("network disconnect", "id", c.ID, "network", n.name, "err", err)
	}
	d.endpointEvent(ep, eventtypes.ActionDisconnect, c.ID)
	if ep == c.Network {
		// The first endpoint holds the namespace: another takes its place,
		// or a placeholder keeps the namespace.
		next := &libnetwork.Endpoint{SandboxKey: ep.SandboxKey}
		names := make([]string, 0, len(c.Networks))
		for k := range c.Networks {
			names = append(names, k)
		}
		sort.Strings(names)
		if len(names) > 0 {
			next = c.Networks[names[0]]
			delete(c.Networks, names[0])
		}
		c.Network = next
	} else {
		delete(c.Networks, n.name)
	}
	delete(c.NetworkConfig, n.name)
	if err := setGateways(c); err != nil {
		slog.Error("network disconnect: default routes", "id", c.ID, "network", n.name, "err", err)
	}
	return c.SaveLocked()
}
