package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/network"
	"github.com/vishvananda/netlink"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/libnetwork/netns"
	"github.com/sdengine/engine/libnetwork/portmap"
	"github.com/sdengine/engine/pkg/errdefs"
)

// The daemon only orchestrates networking: the default bridge, its
// addresses, veths, namespaces and NAT are libnetwork/bridge's. Here: when
// a container is attached (its start) and detached (its exit, a failed
// start, recovery), and what its network files and spec say.

// newBridge sets up the default bridge, unless --bridge none.
func newBridge(cfg *config.Config) (*bridge.Bridge, error) {
	if cfg.BridgeDisabled() {
		return nil, nil
	}
	bip6 := ""
	if cfg.IPv6 {
		p, err := netip.ParsePrefix(cfg.FixedCIDRv6)
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Bits() > 126 {
			return nil, fmt.Errorf("default bridge network: invalid --fixed-cidr-v6 %q: want an IPv6 subnet (fd00:1::/64)", cfg.FixedCIDRv6)
		}
		bip6 = netip.PrefixFrom(p.Masked().Addr().Next(), p.Bits()).String()
	}
	b, err := bridge.New(bridge.Config{
		Name:      cfg.Bridge,
		BIP:       cfg.BIP,
		BIP6:      bip6,
		FixedCIDR: cfg.FixedCIDR,
		MTU:       cfg.MTU,
		IPForward: cfg.IPForwardEnabled(),
		IPTables:  cfg.IPTablesEnabled(),
		StateDir:  filepath.Join(cfg.Root, "network"),
		NetnsDir:  filepath.Join(cfg.ExecRoot, "netns"),
	})
	if err != nil {
		return nil, fmt.Errorf("default bridge network: %w", err)
	}
	return b, nil
}

// isBridgeMode reports whether the mode is the default bridge's.
func isBridgeMode(m containertypes.NetworkMode) bool {
	return m == "" || m == "default" || m == "bridge"
}

// isUserMode reports whether the mode names a user-defined network.
func isUserMode(m containertypes.NetworkMode) bool {
	return !isBridgeMode(m) && m != "host" && m != "none" && !m.IsContainer()
}

func sandboxKey(c *container.Container) string {
	if c.Network != nil {
		return c.Network.SandboxKey
	}
	return ""
}

// containerEndpoints are c's endpoints: the first network's, then the
// others by name. The caller holds c's lock.
func containerEndpoints(c *container.Container) []*libnetwork.Endpoint {
	var out []*libnetwork.Endpoint
	if c.Network != nil && c.Network.Network != "" {
		out = append(out, c.Network)
	}
	names := make([]string, 0, len(c.Networks))
	for n := range c.Networks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, c.Networks[n])
	}
	return out
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
func (d *Daemon) resolveNet(ref string) (joinedNet, error) {
	if isBridgeMode(containertypes.NetworkMode(ref)) || ref == networkID(bridge.NetworkName) {
		if d.bridge == nil {
			return joinedNet{}, errdefs.NotFound(fmt.Errorf("network %s not found", ref))
		}
		return joinedNet{name: bridge.NetworkName, br: d.bridge}, nil
	}
	n, err := d.userNetwork(ref)
	if err != nil {
		return joinedNet{}, err
	}
	if n.br == nil {
		return joinedNet{}, fmt.Errorf("network %s has no bridge (see the daemon's log)", n.Name)
	}
	return joinedNet{name: n.Name, id: n.ID, br: n.br}, nil
}

// wantedNetworks are the networks c joins at its start, in order: its
// network mode's, then the others it was connected to, by name.
func (d *Daemon) wantedNetworks(c *container.Container) ([]joinedNet, error) {
	mode := c.HostConfig.NetworkMode
	var out []joinedNet
	seen := map[string]bool{}
	add := func(ref string, es *network.EndpointSettings) error {
		n, err := d.resolveNet(ref)
		if err != nil {
			return err
		}
		if seen[n.name] {
			return nil
		}
		seen[n.name] = true
		n.es = es
		if n.es == nil {
			n.es = c.NetworkConfig[n.name]
		}
		if n.es == nil {
			n.es = c.NetworkConfig[ref]
		}
		out = append(out, n)
		return nil
	}
	switch {
	case isBridgeMode(mode):
		if d.bridge == nil {
			break
		}
		if err := add(bridge.NetworkName, nil); err != nil {
			return nil, err
		}
	case isUserMode(mode):
		if err := add(string(mode), nil); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	names := make([]string, 0, len(c.NetworkConfig))
	for n := range c.NetworkConfig {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if isBridgeMode(containertypes.NetworkMode(n)) && d.bridge == nil {
			continue
		}
		if err := add(n, c.NetworkConfig[n]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// attachOptions are what es asks of an endpoint.
func attachOptions(c *container.Container, es *network.EndpointSettings, first bool) (bridge.AttachOptions, error) {
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
	//lint:ignore SA1019 older clients still set the container's MAC address in its config
	if first && o.MAC == "" && c.Config.MacAddress != "" {
		//lint:ignore SA1019 see above
		o.MAC = c.Config.MacAddress
	}
	return o, nil
}

// connectNetwork attaches c at its start to its networks: its namespace
// (at <exec-root>/netns/<id12>), then per network an address, an interface
// (eth0, eth1, ...) and, on the first network that routes, the default
// route and the published ports; the embedded DNS server if one of them
// is user-defined. The caller holds c's lock and calls disconnectNetwork
// if the start fails later.
func (d *Daemon) connectNetwork(c *container.Container, hostname string) (retErr error) {
	nets, err := d.wantedNetworks(c)
	if err != nil || len(nets) == 0 {
		return err
	}
	reqs, err := portmap.Requests(c.HostConfig.PortBindings, c.Config.ExposedPorts, c.HostConfig.PublishAllPorts)
	if err != nil {
		return err
	}
	nsPath := filepath.Join(d.netnsDir(), c.ID[:12])
	_ = netns.Remove(nsPath) // one a crash left
	if err := netns.Create(nsPath); err != nil {
		return err
	}
	c.Network, c.Networks = &libnetwork.Endpoint{SandboxKey: nsPath}, nil
	defer func() {
		if retErr != nil {
			d.disconnectNetwork(c)
		}
	}()
	routed := false
	for i, n := range nets {
		o, err := attachOptions(c, n.es, i == 0)
		if err != nil {
			return err
		}
		o.NetnsPath, o.IfName = nsPath, fmt.Sprintf("eth%d", i)
		if !routed && !n.br.Internal() {
			o.Ports, routed = reqs, true
		}
		ep, err := n.br.Attach(c.ID, o)
		if err != nil {
			return fmt.Errorf("driver failed programming external connectivity on endpoint %s (%s): %w", strings.TrimPrefix(c.Name, "/"), c.ID[:12], err)
		}
		ep.SandboxKey = nsPath
		setEndpoint(c, n.name, ep, i == 0)
		d.endpointEvent(ep, eventtypes.ActionConnect, c.ID)
	}
	if err := setGateways(c); err != nil {
		return err
	}
	d.registerDNS(c)
	return nil
}

// gatewayEndpoints are the endpoints that give c its default routes: per
// address family, of the endpoints not on an internal network, the one
// with the highest GwPriority, a tie going to the network whose name
// sorts first (as Docker). Nil for a family no endpoint routes.
func gatewayEndpoints(c *container.Container) (v4, v6 *libnetwork.Endpoint) {
	better := func(ep, cur *libnetwork.Endpoint) bool {
		return cur == nil || ep.GwPriority > cur.GwPriority || ep.GwPriority == cur.GwPriority && ep.Network < cur.Network
	}
	for _, ep := range containerEndpoints(c) {
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

// setGateways makes c's default routes those of gatewayEndpoints: at its
// start, and whenever it is connected to or disconnected from a network.
// The caller holds c's lock.
func setGateways(c *container.Container) error {
	if c.Network == nil || c.Network.SandboxKey == "" {
		return nil
	}
	ns, err := netns.Open(c.Network.SandboxKey)
	if err != nil {
		return err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in the container's netns: %w", err)
	}
	defer h.Close()
	index := func(ep *libnetwork.Endpoint) (int, error) {
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
	v4, v6 := gatewayEndpoints(c)
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

// setEndpoint records the container's endpoint on the network name: its
// first (c.Network, whose namespace the others share) or a further one.
func setEndpoint(c *container.Container, name string, ep *libnetwork.Endpoint, first bool) {
	if first {
		c.Network = ep
		return
	}
	if c.Networks == nil {
		c.Networks = map[string]*libnetwork.Endpoint{}
	}
	c.Networks[name] = ep
}

// bridgeOf is the bridge an endpoint is on (nil if its network is gone).
func (d *Daemon) bridgeOf(ep *libnetwork.Endpoint) *bridge.Bridge {
	if ep.NetworkID == "" {
		return d.bridge
	}
	if d.nets == nil {
		return nil
	}
	d.nets.mu.Lock()
	defer d.nets.mu.Unlock()
	if n := d.nets.nets[ep.NetworkID]; n != nil {
		return n.br
	}
	return nil
}

// disconnectNetwork releases what connectNetwork gave c: its DNS server
// and names, each endpoint, its namespace. The caller holds c's lock.
func (d *Daemon) disconnectNetwork(c *container.Container) {
	d.unregisterDNS(c, "")
	for _, ep := range containerEndpoints(c) {
		br := d.bridgeOf(ep)
		if br == nil {
			continue
		}
		if err := br.Detach(c.ID); err != nil {
			slog.Error("detach from a network", "id", c.ID, "network", ep.Network, "err", err)
		}
		d.endpointEvent(ep, eventtypes.ActionDisconnect, c.ID)
	}
	if c.Network != nil || isBridgeMode(c.HostConfig.NetworkMode) || isUserMode(c.HostConfig.NetworkMode) {
		if err := netns.Remove(filepath.Join(d.netnsDir(), c.ID[:12])); err != nil {
			slog.Error("remove a container's network namespace", "id", c.ID, "err", err)
		}
	}
	c.Network, c.Networks = nil, nil
}

// restoreNetwork takes back the networking of a container that kept
// running across a daemon restart. The caller holds c's lock.
func (d *Daemon) restoreNetwork(c *container.Container) {
	for _, ep := range containerEndpoints(c) {
		br := d.bridgeOf(ep)
		if br == nil {
			slog.Warn("recovery: the network of a running container is gone", "id", c.ID, "network", ep.Network)
			continue
		}
		if err := br.Restore(c.ID, ep); err != nil {
			slog.Error("recovery: restore the network of a running container", "id", c.ID, "err", err)
		}
	}
	d.registerDNS(c)
}

// reconcileNetworks runs at start once the running containers are
// restored: each bridge's rules, leases and veths are made to match them,
// and namespaces no running container holds are removed.
func (d *Daemon) reconcileNetworks() {
	if d.bridge != nil {
		if err := d.bridge.Reconcile(); err != nil {
			slog.Error("recovery: reconciling the bridge network", "err", err)
		}
	}
	keep := map[string]bool{}
	for _, n := range d.userNetworks() {
		if n.br == nil {
			continue
		}
		if err := n.br.Reconcile(); err != nil {
			slog.Error("recovery: reconciling a network", "network", n.Name, "err", err)
		}
	}
	for _, c := range d.containers.List() {
		c.Lock()
		if c.Network != nil && c.State.Status == container.StatusRunning {
			keep[filepath.Base(c.Network.SandboxKey)] = true
		}
		c.Unlock()
	}
	if ents, err := os.ReadDir(d.netnsDir()); err == nil {
		for _, e := range ents {
			if !keep[e.Name()] {
				slog.Info("recovery: removing a network namespace no running container holds", "netns", e.Name())
				if err := netns.Remove(filepath.Join(d.netnsDir(), e.Name())); err != nil {
					slog.Error("recovery: remove a network namespace", "err", err)
				}
			}
		}
	}
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

// validateNetworkMode refuses at create what Docker refuses for a network
// mode (400), and the published ports it cannot read.
func validateNetworkMode(cfg *containertypes.Config, hc *containertypes.HostConfig) error {
	switch mode := hc.NetworkMode; {
	case isBridgeMode(mode), mode == "none", mode == "host", isUserMode(mode):
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

// validateNetworking refuses at create a network mode or endpoint that
// cannot be: an unknown network (404), an address asked for on the
// default bridge or outside the network's subnet (400).
func (d *Daemon) validateNetworking(cfg *containertypes.Config, hc *containertypes.HostConfig, nc *network.NetworkingConfig) error {
	if err := validateNetworkMode(cfg, hc); err != nil {
		return err
	}
	mode := hc.NetworkMode
	if isUserMode(mode) {
		if _, err := d.userNetwork(string(mode)); err != nil {
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
		if isBridgeMode(containertypes.NetworkMode(name)) && d.bridge == nil {
			// --bridge none: the default network is lo only, as the
			// network mode says (clients name it in EndpointsConfig too).
			continue
		}
		n, err := d.resolveNet(name)
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
