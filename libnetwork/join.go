package libnetwork

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"
	"github.com/vishvananda/netlink"

	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/libnetwork/netns"
	"github.com/sdengine/engine/libnetwork/portmap"
	"github.com/sdengine/engine/pkg/errdefs"
)

// JoinRequest is what a container asks of the network at its start, as
// its record says.
type JoinRequest struct {
	ContainerID string
	// Name is the container's name ("/web"); Hostname its --hostname
	// ("" without one), a name of it on user-defined networks.
	Name, Hostname string
	// NetworkMode: bridge (or "" or default), host, none, container:X or
	// a user-defined network's name or ID.
	NetworkMode string
	// EndpointsConfig are the networks it was created with or connected
	// to, by name, with what it asked of each.
	EndpointsConfig map[string]*network.EndpointSettings
	// MacAddress is the container-wide MAC address older clients set,
	// for its first network.
	MacAddress      string
	PortBindings    nat.PortMap
	ExposedPorts    nat.PortSet
	PublishAllPorts bool
	// DNS are its --dns servers: its embedded DNS server's upstreams.
	DNS []string
	// Links are its --link options: on a user-defined network, names of
	// its embedded DNS for it alone.
	Links []string
	// LegacyLinks are its links on the default bridge, resolved by the
	// daemon, in the order of their aliases.
	LegacyLinks []LinkedContainer
}

// JoinResult is what a start gets of the network.
type JoinResult struct {
	// Attachment is what the record keeps: the endpoints, the namespace
	// (Network.SandboxKey; none for host, none, container:X or a bridge
	// mode without a bridge).
	Attachment
	// LinkEnv and LinkHosts are what the legacy links give: environment
	// variables and /etc/hosts lines.
	LinkEnv, LinkHosts []string
}

// IsBridgeMode reports whether the mode is the default bridge's.
func IsBridgeMode(m string) bool {
	return m == "" || m == "default" || m == "bridge"
}

// IsUserMode reports whether the mode names a user-defined network.
func IsUserMode(m string) bool {
	return !IsBridgeMode(m) && m != "host" && m != "none" && !containertypes.NetworkMode(m).IsContainer()
}

// joinedNet is a network a container joins: the default bridge (id "")
// or a user-defined one.
type joinedNet struct {
	name, id string
	br       *bridge.Bridge
	es       *network.EndpointSettings
}

// resolveNet finds the network ref names among those a container can
// join (the default bridge and the user-defined networks).
func (c *Controller) resolveNet(ref string) (joinedNet, error) {
	if IsBridgeMode(ref) || ref == NetworkID(bridge.NetworkName) {
		if c.bridge == nil {
			return joinedNet{}, errdefs.NotFound(fmt.Errorf("network %s not found", ref))
		}
		return joinedNet{name: bridge.NetworkName, br: c.bridge}, nil
	}
	n, err := c.userNetwork(ref)
	if err != nil {
		return joinedNet{}, err
	}
	if n.br == nil {
		return joinedNet{}, fmt.Errorf("network %s has no bridge (see the daemon's log)", n.Name)
	}
	return joinedNet{name: n.Name, id: n.ID, br: n.br}, nil
}

// WantedNetwork is a network a container joins at its start.
type WantedNetwork struct {
	Name string
	// ID is the user-defined network's ("" for the default bridge).
	ID string
	// Settings are what the container asked of it (nil: nothing).
	Settings *network.EndpointSettings
}

// WantedNetworks are the networks a container of that mode and endpoints
// config joins at its start, in order (container inspect shows them).
func (c *Controller) WantedNetworks(mode string, cfg map[string]*network.EndpointSettings) ([]WantedNetwork, error) {
	nets, err := c.wantedNetworks(mode, cfg)
	out := make([]WantedNetwork, 0, len(nets))
	for _, n := range nets {
		out = append(out, WantedNetwork{Name: n.name, ID: n.id, Settings: n.es})
	}
	return out, err
}

// wantedNetworks are the networks a container joins at its start, in
// order: its network mode's, then the others it was connected to, by
// name.
func (c *Controller) wantedNetworks(mode string, cfg map[string]*network.EndpointSettings) ([]joinedNet, error) {
	var out []joinedNet
	seen := map[string]bool{}
	add := func(ref string, es *network.EndpointSettings) error {
		n, err := c.resolveNet(ref)
		if err != nil {
			return err
		}
		if seen[n.name] {
			return nil
		}
		seen[n.name] = true
		n.es = es
		if n.es == nil {
			n.es = cfg[n.name]
		}
		if n.es == nil {
			n.es = cfg[ref]
		}
		out = append(out, n)
		return nil
	}
	switch {
	case IsBridgeMode(mode):
		if c.bridge == nil {
			break
		}
		if err := add(bridge.NetworkName, nil); err != nil {
			return nil, err
		}
	case IsUserMode(mode):
		if err := add(mode, nil); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	names := make([]string, 0, len(cfg))
	for n := range cfg {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if IsBridgeMode(n) && c.bridge == nil {
			continue
		}
		if err := add(n, cfg[n]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// attachOptions are what es asks of an endpoint; mac is the
// container-wide MAC address, for the first network.
func attachOptions(mac string, es *network.EndpointSettings, first bool) (bridge.AttachOptions, error) {
	var o bridge.AttachOptions
	if es != nil {
		o.Aliases = es.Aliases
		o.MAC = es.MacAddress
		o.GwPriority = es.GwPriority
		if es.IPAMConfig != nil && es.IPAMConfig.IPv4Address != "" {
			ip, err := netip.ParseAddr(es.IPAMConfig.IPv4Address)
			if err != nil || !ip.Is4() {
				return o, errdefs.InvalidParameter(fmt.Errorf("invalid IPv4 address: %s", es.IPAMConfig.IPv4Address))
			}
			o.IP = ip
		}
		if es.IPAMConfig != nil && es.IPAMConfig.IPv6Address != "" {
			ip, err := netip.ParseAddr(es.IPAMConfig.IPv6Address)
			if err != nil || !ip.Is6() || ip.Is4In6() {
				return o, errdefs.InvalidParameter(fmt.Errorf("invalid IPv6 address: %s", es.IPAMConfig.IPv6Address))
			}
			o.IP6 = ip
		}
	}
	if first && o.MAC == "" && mac != "" {
		o.MAC = mac
	}
	return o, nil
}

// Join attaches a container at its start: first what its legacy links
// give, then its namespace (at <exec-root>/netns/<id12>), then per
// network an address, an interface (eth0, eth1, ...) and, on the first
// network that routes, the default route and the published ports; the
// embedded DNS server if one of them is user-defined. A failed Join
// leaves nothing; after a successful one the daemon calls Leave when the
// container stops or its start fails later. The daemon holds the
// container's lock.
func (c *Controller) Join(ctx context.Context, req JoinRequest) (res JoinResult, retErr error) {
	req.EndpointsConfig = maps.Clone(req.EndpointsConfig)
	env, hosts, err := c.legacyLinks(&req)
	if err != nil {
		return JoinResult{}, err
	}
	res.LinkEnv, res.LinkHosts = env, hosts
	nets, err := c.wantedNetworks(req.NetworkMode, req.EndpointsConfig)
	if err != nil {
		return JoinResult{}, err
	}
	sb := &sandbox{req: req}
	if len(nets) == 0 {
		// host, none, container:X: nothing to attach, but the builtin
		// networks' inspect lists the container.
		c.sbMu.Lock()
		c.sandboxes[req.ContainerID] = sb
		c.sbMu.Unlock()
		return res, nil
	}
	reqs, err := portmap.Requests(req.PortBindings, req.ExposedPorts, req.PublishAllPorts)
	if err != nil {
		return JoinResult{}, err
	}
	id := req.ContainerID
	nsPath := filepath.Join(c.netnsDir(), id[:12])
	_ = netns.Remove(nsPath) // one a crash left
	if err := netns.Create(nsPath); err != nil {
		return JoinResult{}, err
	}
	c.sbMu.Lock()
	sb.att = Attachment{Network: &Endpoint{SandboxKey: nsPath}}
	c.sandboxes[id] = sb
	c.sbMu.Unlock()
	defer func() {
		if retErr != nil {
			c.Leave(id, req.NetworkMode, Attachment{})
		}
	}()
	routed := false
	for i, n := range nets {
		o, err := attachOptions(req.MacAddress, n.es, i == 0)
		if err != nil {
			return JoinResult{}, err
		}
		o.NetnsPath, o.IfName = nsPath, fmt.Sprintf("eth%d", i)
		if !routed && !n.br.Internal() {
			o.Ports, routed = reqs, true
		}
		ep, err := n.br.Attach(id, o)
		if err != nil {
			return JoinResult{}, fmt.Errorf("driver failed programming external connectivity on endpoint %s (%s): %w", trimSlash(req.Name), id[:12], err)
		}
		ep.SandboxKey = nsPath
		c.sbMu.Lock()
		sb.att.set(n.name, ep, i == 0)
		c.sbMu.Unlock()
		c.endpointEvent(ep, eventtypes.ActionConnect, id)
	}
	if err := setGateways(sb.att); err != nil {
		return JoinResult{}, err
	}
	c.registerDNS(sb)
	c.sbMu.Lock()
	res.Attachment = sb.att.clone()
	c.sbMu.Unlock()
	return res, nil
}

func trimSlash(name string) string {
	if len(name) > 0 && name[0] == '/' {
		return name[1:]
	}
	return name
}

// gatewayEndpoints are the endpoints that give a container its default
// routes: per address family, of the endpoints not on an internal
// network, the one with the highest GwPriority, a tie going to the
// network whose name sorts first (as Docker). Nil for a family no
// endpoint routes.
func gatewayEndpoints(a Attachment) (v4, v6 *Endpoint) {
	better := func(ep, cur *Endpoint) bool {
		return cur == nil || ep.GwPriority > cur.GwPriority || ep.GwPriority == cur.GwPriority && ep.Network < cur.Network
	}
	for _, ep := range a.Endpoints() {
		if ep.Internal {
			continue
		}
		if ep.Gateway != "" && better(ep, v4) {
			v4 = ep
		}
		if ep.IPv6Gateway != "" && better(ep, v6) {
			v6 = ep
		}
	}
	return v4, v6
}

// setGateways makes a container's default routes those of
// gatewayEndpoints: at its start, and whenever it is connected to or
// disconnected from a network.
func setGateways(a Attachment) error {
	if a.Network == nil || a.Network.SandboxKey == "" {
		return nil
	}
	ns, err := netns.Open(a.Network.SandboxKey)
	if err != nil {
		return err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in the container's netns: %w", err)
	}
	defer h.Close()
	index := func(ep *Endpoint) (int, error) {
		l, err := h.LinkByName(ep.IfName)
		if err != nil {
			return 0, fmt.Errorf("interface %s: %w", ep.IfName, err)
		}
		return l.Attrs().Index, nil
	}
	var (
		i4, i6   int
		gw4, gw6 netip.Addr
	)
	v4, v6 := gatewayEndpoints(a)
	if v4 != nil {
		if i4, err = index(v4); err != nil {
			return err
		}
		gw4, _ = netip.ParseAddr(v4.Gateway)
	}
	if v6 != nil {
		if i6, err = index(v6); err != nil {
			return err
		}
		gw6, _ = netip.ParseAddr(v6.IPv6Gateway)
	}
	return bridge.SetGateways(h, i4, gw4, i6, gw6)
}

// bridgeOf is the bridge an endpoint is on (nil if its network is gone).
func (c *Controller) bridgeOf(ep *Endpoint) *bridge.Bridge {
	if ep.NetworkID == "" {
		return c.bridge
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nets[ep.NetworkID]; n != nil {
		return n.br
	}
	return nil
}

// Leave releases what Join (or Restore) gave the container: its DNS
// server and names, each endpoint, its namespace. held is what the
// container's record keeps, released instead when this controller did
// not join it (an exit or a cut-short start found at recovery); mode is
// its network mode. The daemon holds the container's lock.
func (c *Controller) Leave(containerID, mode string, held Attachment) {
	c.sbMu.Lock()
	sb := c.sandboxes[containerID]
	delete(c.sandboxes, containerID)
	c.sbMu.Unlock()
	att := held
	if sb != nil {
		att, mode = sb.att, sb.req.NetworkMode
	}
	c.unregisterDNS(containerID, "")
	for _, ep := range att.Endpoints() {
		br := c.bridgeOf(ep)
		if br == nil {
			continue
		}
		if err := br.Detach(containerID); err != nil {
			slog.Error("detach from a network", "id", containerID, "network", ep.Network, "err", err)
		}
		c.endpointEvent(ep, eventtypes.ActionDisconnect, containerID)
	}
	if att.Network != nil || IsBridgeMode(mode) || IsUserMode(mode) {
		if err := netns.Remove(filepath.Join(c.netnsDir(), containerID[:12])); err != nil {
			slog.Error("remove a container's network namespace", "id", containerID, "err", err)
		}
	}
}

// Restore takes back the networking of a container that kept running
// across a daemon restart: req is what it asked for, held what its
// record keeps. The daemon holds the container's lock; it calls
// Reconcile once every running container is restored.
func (c *Controller) Restore(req JoinRequest, held Attachment) {
	req.EndpointsConfig = maps.Clone(req.EndpointsConfig)
	sb := &sandbox{req: req, att: held.clone()}
	c.sbMu.Lock()
	c.sandboxes[req.ContainerID] = sb
	c.sbMu.Unlock()
	for _, ep := range held.Endpoints() {
		br := c.bridgeOf(ep)
		if br == nil {
			slog.Warn("recovery: the network of a running container is gone", "id", req.ContainerID, "network", ep.Network)
			continue
		}
		if err := br.Restore(req.ContainerID, ep); err != nil {
			slog.Error("recovery: restore the network of a running container", "id", req.ContainerID, "err", err)
		}
	}
	c.registerDNS(sb)
}

// Reconcile runs at start once the running containers are restored: each
// bridge's rules, leases and veths are made to match them, and
// namespaces no restored container holds are removed.
func (c *Controller) Reconcile() {
	if c.bridge != nil {
		if err := c.bridge.Reconcile(); err != nil {
			slog.Error("recovery: reconciling the bridge network", "err", err)
		}
	}
	for _, n := range c.userNetworks() {
		if n.br == nil {
			continue
		}
		if err := n.br.Reconcile(); err != nil {
			slog.Error("recovery: reconciling a network", "network", n.Name, "err", err)
		}
	}
	keep := map[string]bool{}
	c.sbMu.Lock()
	for _, sb := range c.sandboxes {
		if sb.att.Network != nil {
			keep[filepath.Base(sb.att.Network.SandboxKey)] = true
		}
	}
	c.sbMu.Unlock()
	if ents, err := os.ReadDir(c.netnsDir()); err == nil {
		for _, e := range ents {
			if !keep[e.Name()] {
				slog.Info("recovery: removing a network namespace no running container holds", "netns", e.Name())
				if err := netns.Remove(filepath.Join(c.netnsDir(), e.Name())); err != nil {
					slog.Error("recovery: remove a network namespace", "err", err)
				}
			}
		}
	}
}

// ValidateNetworkMode refuses at create what Docker refuses for a network
// mode (400), and the published ports it cannot read.
func ValidateNetworkMode(cfg *containertypes.Config, hc *containertypes.HostConfig) error {
	switch mode := hc.NetworkMode; {
	case IsBridgeMode(string(mode)), mode == "none", mode == "host", IsUserMode(string(mode)):
	case mode.IsContainer():
		if mode.ConnectedContainer() == "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid network mode %q: no container named", mode))
		}
		if cfg.Hostname != "" {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: hostname and the network mode"))
		}
		if len(hc.PortBindings) > 0 || hc.PublishAllPorts {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: port publishing and the container type network mode"))
		}
		if len(cfg.ExposedPorts) > 0 {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: port exposing and the container type network mode"))
		}
		if len(hc.ExtraHosts) > 0 {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: custom host-to-IP mapping and the network mode"))
		}
		if len(hc.DNS) > 0 {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: dns and the network mode"))
		}
	}
	if _, err := portmap.Requests(hc.PortBindings, nil, false); err != nil {
		return err
	}
	return nil
}

// ValidateNetworking refuses at create a network mode or endpoint that
// cannot be: an unknown network (404), an address asked for on the
// default bridge or outside the network's subnet (400).
func (c *Controller) ValidateNetworking(cfg *containertypes.Config, hc *containertypes.HostConfig, nc *network.NetworkingConfig) error {
	if err := ValidateNetworkMode(cfg, hc); err != nil {
		return err
	}
	mode := hc.NetworkMode
	if IsUserMode(string(mode)) {
		if _, err := c.userNetwork(string(mode)); err != nil {
			return err
		}
	}
	if nc == nil {
		return nil
	}
	for name, es := range nc.EndpointsConfig {
		if es == nil {
			continue
		}
		if (mode == "host" || mode == "none" || mode.IsContainer()) && name != string(mode) {
			return errdefs.InvalidParameter(fmt.Errorf("container cannot be connected to network endpoints: %s, %s", mode, name))
		}
		if mode == "host" || mode == "none" || mode.IsContainer() {
			continue
		}
		if IsBridgeMode(name) && c.bridge == nil {
			// --bridge none: the default network is lo only, as the
			// network mode says (clients name it in EndpointsConfig too).
			continue
		}
		n, err := c.resolveNet(name)
		if errdefs.IsNotFound(err) && name != string(mode) {
			// A further network is looked up when the container starts and
			// joins it, as in Docker: create does not refuse it.
			continue
		}
		if err != nil {
			return err
		}
		if es.IPAMConfig != nil && (es.IPAMConfig.IPv4Address != "" || es.IPAMConfig.IPv6Address != "") {
			if n.id == "" {
				return errdefs.InvalidParameter(fmt.Errorf("user specified IP address is supported on user defined networks only"))
			}
			if v := es.IPAMConfig.IPv4Address; v != "" {
				ip, err := netip.ParseAddr(v)
				if err != nil || !ip.Is4() {
					return errdefs.InvalidParameter(fmt.Errorf("invalid IPv4 address: %s", v))
				}
				if !n.br.Subnet().Contains(ip) {
					return errdefs.InvalidParameter(fmt.Errorf("no configured subnet or ip-range contain the IP address %s", ip))
				}
			}
			if v := es.IPAMConfig.IPv6Address; v != "" {
				ip, err := netip.ParseAddr(v)
				if err != nil || !ip.Is6() || ip.Is4In6() {
					return errdefs.InvalidParameter(fmt.Errorf("invalid IPv6 address: %s", v))
				}
				if !n.br.Subnet6().IsValid() || !n.br.Subnet6().Contains(ip) {
					return errdefs.InvalidParameter(fmt.Errorf("no configured subnet or ip-range contain the IP address %s", ip))
				}
			}
		}
		if len(es.Aliases) > 0 && n.id == "" {
			return errdefs.InvalidParameter(fmt.Errorf("network-scoped alias is supported only for containers in user defined networks"))
		}
		if es.MacAddress != "" {
			if _, err := net.ParseMAC(es.MacAddress); err != nil {
				return errdefs.InvalidParameter(fmt.Errorf("invalid MAC address: %s", es.MacAddress))
			}
		}
	}
	return nil
}
