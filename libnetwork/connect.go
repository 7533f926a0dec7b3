package libnetwork

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/pkg/errdefs"
)

// CheckConnect refuses what no container can be connected to: the host
// and none networks, and a network that is not there. It runs before the
// daemon looks the container up, so that a bad network is the error.
func (c *Controller) CheckConnect(ref string) error {
	if ref == "host" || ref == "none" || ref == NetworkID("host") || ref == NetworkID("none") {
		return errdefs.InvalidParameter(fmt.Errorf("container cannot be disconnected from host network or connected to host network"))
	}
	_, err := c.resolveNet(ref)
	return err
}

// NetworkName is the name of the network ref names (by name, ID or ID
// prefix) that a container can join.
func (c *Controller) NetworkName(ref string) (string, error) {
	n, err := c.resolveNet(ref)
	if err != nil {
		return "", err
	}
	return n.name, nil
}

// ConnectRequest is a network connect of a container whose network mode
// the daemon checked (not host, none or container:X).
type ConnectRequest struct {
	ContainerID string
	// Name is the container's name ("/web").
	Name string
	// Ref names the network; Settings are what the container asks of it.
	Ref      string
	Settings *network.EndpointSettings
	// Running: the container runs (or is paused), and gets its endpoint
	// at once; otherwise it joins the network at its next start.
	Running bool
	// Configured are the networks its record already names.
	Configured map[string]*network.EndpointSettings
}

// ConnectResult is what the record keeps of a connect.
type ConnectResult struct {
	// Network is the network's name, the key of the container's
	// endpoints config.
	Network string
	// Attachment is the running container's endpoints now (zero when it
	// does not run).
	Attachment Attachment
}

// Connect serves POST /networks/{id}/connect for one container: a running
// container gets an interface on the network at once (its next ethN).
// The daemon holds the container's lock and keeps the settings.
func (c *Controller) Connect(ctx context.Context, req ConnectRequest) (ConnectResult, error) {
	n, err := c.resolveNet(req.Ref)
	if err != nil {
		return ConnectResult{}, err
	}
	es := req.Settings
	if es == nil {
		es = &network.EndpointSettings{}
	}
	if n.id == "" {
		if es.IPAMConfig != nil && (es.IPAMConfig.IPv4Address != "" || es.IPAMConfig.IPv6Address != "") {
			return ConnectResult{}, errdefs.InvalidParameter(fmt.Errorf("user specified IP address is supported on user defined networks only"))
		}
		if len(es.Aliases) > 0 {
			return ConnectResult{}, errdefs.InvalidParameter(fmt.Errorf("network-scoped alias is supported only for containers in user defined networks"))
		}
	}
	id := req.ContainerID
	sb := c.sandbox(id)
	if sb != nil {
		for _, ep := range sb.att.Endpoints() {
			if ep.Network == n.name {
				return ConnectResult{}, errdefs.Forbidden(fmt.Errorf("endpoint with name %s already exists in network %s", trimSlash(req.Name), n.name))
			}
		}
	}
	res := ConnectResult{Network: n.name}
	if !req.Running {
		if _, ok := req.Configured[n.name]; ok {
			return ConnectResult{}, errdefs.Forbidden(fmt.Errorf("endpoint with name %s already exists in network %s", trimSlash(req.Name), n.name))
		}
		return res, nil
	}
	if sb == nil || sb.att.SandboxKey() == "" {
		return ConnectResult{}, errdefs.Conflict(fmt.Errorf("container %s has no network namespace to connect", id[:12]))
	}
	o, err := attachOptions("", es, false)
	if err != nil {
		return ConnectResult{}, err
	}
	used := map[string]bool{}
	for _, ep := range sb.att.Endpoints() {
		used[ep.IfName] = true
	}
	for i := 0; ; i++ {
		if name := fmt.Sprintf("eth%d", i); !used[name] {
			o.IfName = name
			break
		}
	}
	o.NetnsPath = sb.att.Network.SandboxKey
	ep, err := n.br.Attach(id, o)
	if err != nil {
		return ConnectResult{}, err
	}
	ep.SandboxKey = o.NetnsPath
	c.sbMu.Lock()
	sb.att.set(n.name, ep, sb.att.Network.Network == "")
	c.sbMu.Unlock()
	if err := setGateways(sb.att); err != nil {
		slog.Error("network connect: default routes", "id", id, "network", n.name, "err", err)
	}
	c.registerDNS(sb)
	c.endpointEvent(ep, eventtypes.ActionConnect, id)
	// The new network's settings count from here on (a later
	// registration's links), as the record's do.
	c.sbMu.Lock()
	if sb.req.EndpointsConfig == nil {
		sb.req.EndpointsConfig = map[string]*network.EndpointSettings{}
	}
	sb.req.EndpointsConfig[n.name] = es.Copy()
	res.Attachment = sb.att.clone()
	c.sbMu.Unlock()
	return res, nil
}

// Disconnect serves POST /networks/{id}/disconnect for a running
// container: its interface on the network goes. It returns the
// container's endpoints now. The daemon holds the container's lock and
// forgets the network in its record.
func (c *Controller) Disconnect(ctx context.Context, containerID, ref string) (Attachment, error) {
	n, err := c.resolveNet(ref)
	if err != nil {
		return Attachment{}, err
	}
	sb := c.sandbox(containerID)
	var ep *Endpoint
	if sb != nil {
		for _, e := range sb.att.Endpoints() {
			if e.Network == n.name {
				ep = e
			}
		}
	}
	if ep == nil {
		return Attachment{}, errdefs.Forbidden(fmt.Errorf("container %s is not connected to network %s", containerID, n.name))
	}
	c.unregisterDNS(containerID, n.id)
	if err := n.br.Detach(containerID); err != nil {
		slog.Error("network disconnect", "id", containerID, "network", n.name, "err", err)
	}
	c.endpointEvent(ep, eventtypes.ActionDisconnect, containerID)
	c.sbMu.Lock()
	if ep == sb.att.Network {
		// The first endpoint holds the namespace: another takes its place,
		// or a placeholder keeps the namespace.
		next := &Endpoint{SandboxKey: ep.SandboxKey}
		names := make([]string, 0, len(sb.att.Networks))
		for k := range sb.att.Networks {
			names = append(names, k)
		}
		sort.Strings(names)
		if len(names) > 0 {
			next = sb.att.Networks[names[0]]
			delete(sb.att.Networks, names[0])
		}
		sb.att.Network = next
	} else {
		delete(sb.att.Networks, n.name)
	}
	delete(sb.req.EndpointsConfig, n.name)
	att := sb.att.clone()
	c.sbMu.Unlock()
	if err := setGateways(att); err != nil {
		slog.Error("network disconnect: default routes", "id", containerID, "network", n.name, "err", err)
	}
	return att, nil
}
