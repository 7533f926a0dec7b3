package libnetwork

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stringid"
	"github.com/vishvananda/netlink"

	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/libnetwork/ipam"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// User-defined networks (docker network create): each is a bridge of its
// own (br-<id12>, or com.docker.network.bridge.name), with its addresses
// (ipam) and nftables table, all libnetwork/bridge's as for the default
// bridge. Their definitions are kept in <data-root>/network/networks.json;
// a starting daemon makes their bridges again, a stopping one removes them
// (as the default bridge), so that a stopped daemon leaves nothing on the
// host. Containers on them get the embedded DNS server (dns.go).

// userNetwork is a network's definition, as kept on disk.
type userNetwork struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Subnet  string    `json:"subnet"`
	Gateway string    `json:"gateway"`
	IPRange string    `json:"ip_range,omitempty"`
	// IPv6 (--ipv6): its subnet and gateway.
	EnableIPv6 bool              `json:"ipv6,omitempty"`
	Subnet6    string            `json:"subnet6,omitempty"`
	Gateway6   string            `json:"gateway6,omitempty"`
	IPRange6   string            `json:"ip_range6,omitempty"`
	Internal   bool              `json:"internal,omitempty"`
	Attachable bool              `json:"attachable,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Options    map[string]string `json:"options,omitempty"`
	IPAMOpts   map[string]string `json:"ipam_options,omitempty"`
	BridgeName string            `json:"bridge"`

	br *bridge.Bridge
}

const (
	optBridgeName = "com.docker.network.bridge.name"
	optMTU        = "com.docker.network.driver.mtu"
)

// openNetworks loads the user-defined networks and makes their bridges.
// A network whose bridge cannot be made is kept (containers on it fail
// to start with the reason).
func (c *Controller) openNetworks() error {
	b, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("networks: %w", err)
	}
	var list []*userNetwork
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("networks: %s: %w", c.path, err)
	}
	for _, n := range list {
		if n.br, err = c.newUserBridge(n); err != nil {
			slog.Error("network: make its bridge", "network", n.Name, "err", err)
		}
		c.nets[n.ID] = n
	}
	c.mu.Lock()
	c.isolateNetworksLocked()
	c.mu.Unlock()
	return nil
}

// isolateNetworksLocked gives every bridge of the engine (the default
// one and each network's) the names of the others, so that nothing is
// routed between two networks (as Docker's isolation chains). The caller
// holds c.mu.
func (c *Controller) isolateNetworksLocked() {
	var all []*bridge.Bridge
	if c.bridge != nil {
		all = append(all, c.bridge)
	}
	for _, n := range c.nets {
		if n.br != nil {
			all = append(all, n.br)
		}
	}
	names := make([]string, 0, len(all))
	for _, b := range all {
		names = append(names, b.Name())
	}
	for _, b := range all {
		if err := b.SetPeers(names); err != nil {
			slog.Error("network isolation: write a bridge's rules", "bridge", b.Name(), "err", err)
		}
	}
}

func (c *Controller) newUserBridge(n *userNetwork) (*bridge.Bridge, error) {
	sub, err := netip.ParsePrefix(n.Subnet)
	if err != nil {
		return nil, err
	}
	mtu := c.cfg.MTU
	if v, ok := n.Options[optMTU]; ok {
		if mtu, err = strconv.Atoi(v); err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid %s %q", optMTU, v))
		}
	}
	bip6 := ""
	if n.EnableIPv6 {
		sub6, err := netip.ParsePrefix(n.Subnet6)
		if err != nil {
			return nil, err
		}
		bip6 = netip.PrefixFrom(netip.MustParseAddr(n.Gateway6), sub6.Bits()).String()
	}
	return bridge.New(bridge.Config{
		Name:        n.BridgeName,
		BIP:         netip.PrefixFrom(netip.MustParseAddr(n.Gateway), sub.Bits()).String(),
		BIP6:        bip6,
		FixedCIDR:   n.IPRange,
		FixedCIDRv6: n.IPRange6,
		MTU:         mtu,
		IPForward:   c.cfg.IPForward && !n.Internal,
		IPTables:    c.cfg.IPTables,
		StateDir:    filepath.Join(c.cfg.Root, "network"),
		NetnsDir:    c.netnsDir(),
		NetworkName: n.Name,
		NetworkID:   n.ID,
		Internal:    n.Internal,
	})
}

// saveLocked writes the definitions; the caller holds c.mu.
func (c *Controller) saveLocked() error {
	list := make([]*userNetwork, 0, len(c.nets))
	for _, n := range c.nets {
		list = append(list, n)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Created.Before(list[j].Created) })
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(c.path, b, 0o600)
}

// userNet finds a user-defined network by ID, name or ID prefix, in
// Docker's order. The caller holds c.mu.
func (c *Controller) findLocked(ref string) (*userNetwork, error) {
	if ref == "" {
		return nil, errdefs.NotFound(fmt.Errorf("network %s not found", ref))
	}
	if n, ok := c.nets[ref]; ok {
		return n, nil
	}
	for _, n := range c.nets {
		if n.Name == ref {
			return n, nil
		}
	}
	var found *userNetwork
	for _, n := range c.nets {
		if strings.HasPrefix(n.ID, ref) {
			if found != nil {
				return nil, errdefs.InvalidParameter(fmt.Errorf("network %s is ambiguous (%d matches found based on ID prefix)", ref, 2))
			}
			found = n
		}
	}
	if found == nil {
		return nil, errdefs.NotFound(fmt.Errorf("network %s not found", ref))
	}
	return found, nil
}

func (c *Controller) userNetwork(ref string) (*userNetwork, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.findLocked(ref)
}

func (c *Controller) userNetworks() []*userNetwork {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*userNetwork, 0, len(c.nets))
	for _, n := range c.nets {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Create serves POST /networks/create for the bridge driver.
func (c *Controller) Create(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error) {
	switch req.Driver {
	case "", "bridge":
	case "host", "null":
		return network.CreateResponse{}, errdefs.Forbidden(fmt.Errorf("only one instance of \"%s\" network is allowed", req.Driver))
	default:
		return network.CreateResponse{}, errdefs.NotImplemented(fmt.Errorf("network driver %q is not supported by this engine: only \"bridge\"", req.Driver))
	}
	if req.Scope != "" && req.Scope != "local" {
		return network.CreateResponse{}, errdefs.NotImplemented(fmt.Errorf("network scope %q is not supported by this engine", req.Scope))
	}
	if req.IPAM != nil && req.IPAM.Driver != "" && req.IPAM.Driver != "default" {
		return network.CreateResponse{}, errdefs.NotImplemented(fmt.Errorf("IPAM driver %q is not supported by this engine", req.IPAM.Driver))
	}
	n := &userNetwork{
		ID: stringid.GenerateRandomID(), Name: req.Name, Created: time.Now(),
		Internal: req.Internal, Attachable: req.Attachable,
		EnableIPv6: req.EnableIPv6 != nil && *req.EnableIPv6,
		Labels:     req.Labels, Options: req.Options,
	}
	if req.IPAM != nil {
		n.IPAMOpts = req.IPAM.Options
	}
	n.BridgeName = "br-" + n.ID[:12]
	if v := n.Options[optBridgeName]; v != "" {
		if len(v) > 15 {
			return network.CreateResponse{}, errdefs.InvalidParameter(fmt.Errorf("invalid %s %q: an interface name is at most 15 characters", optBridgeName, v))
		}
		n.BridgeName = v
	}
	var cfg, cfg6 network.IPAMConfig
	if req.IPAM != nil {
		var v4, v6 []network.IPAMConfig
		for _, c := range req.IPAM.Config {
			if p, err := netip.ParsePrefix(c.Subnet); err == nil && p.Addr().Is6() {
				v6 = append(v6, c)
				continue
			}
			v4 = append(v4, c)
		}
		if len(v4) > 1 {
			return network.CreateResponse{}, errdefs.NotImplemented(fmt.Errorf("a network with more than one IPv4 subnet is not supported by this engine"))
		}
		if len(v6) > 1 {
			return network.CreateResponse{}, errdefs.NotImplemented(fmt.Errorf("a network with more than one IPv6 subnet is not supported by this engine"))
		}
		if len(v6) == 1 && !n.EnableIPv6 {
			return network.CreateResponse{}, errdefs.InvalidParameter(fmt.Errorf("invalid network config: an IPv6 subnet (%s) needs IPv6 enabled (--ipv6)", v6[0].Subnet))
		}
		if len(v4) == 1 {
			cfg = v4[0]
		}
		if len(v6) == 1 {
			cfg6 = v6[0]
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.nets {
		if o.Name == n.Name {
			return network.CreateResponse{}, errdefs.Conflict(fmt.Errorf("network with name %s already exists", n.Name))
		}
		if o.BridgeName == n.BridgeName {
			return network.CreateResponse{}, errdefs.Conflict(fmt.Errorf("bridge name %s is already used by network %s", n.BridgeName, o.Name))
		}
	}
	if err := c.choosePoolLocked(n, cfg); err != nil {
		return network.CreateResponse{}, err
	}
	if n.EnableIPv6 {
		if err := c.choosePool6Locked(n, cfg6); err != nil {
			return network.CreateResponse{}, err
		}
	}
	br, err := c.newUserBridge(n)
	if err != nil {
		return network.CreateResponse{}, fmt.Errorf("create network %s: %w", n.Name, err)
	}
	n.br = br
	c.nets[n.ID] = n
	if err := c.saveLocked(); err != nil {
		delete(c.nets, n.ID)
		_ = br.Destroy()
		return network.CreateResponse{}, fmt.Errorf("save networks: %w", err)
	}
	c.isolateNetworksLocked()
	slog.Info("network created", "name", n.Name, "id", n.ID[:12], "subnet", n.Subnet, "bridge", n.BridgeName)
	c.event(eventtypes.ActionCreate, n.ID, n.Name, "")
	return network.CreateResponse{ID: n.ID, Warning: ""}, nil
}

// choosePoolLocked sets n's subnet, gateway and range: the ones asked
// for, checked (within the subnet, no overlap with another network), or
// the next free default pool.
func (c *Controller) choosePoolLocked(n *userNetwork, cfg network.IPAMConfig) error {
	var used []netip.Prefix
	if c.bridge != nil {
		used = append(used, c.bridge.Subnet())
	}
	for _, o := range c.nets {
		if p, err := netip.ParsePrefix(o.Subnet); err == nil {
			used = append(used, p)
		}
	}
	var subnet netip.Prefix
	if cfg.Subnet == "" {
		if cfg.IPRange != "" || cfg.Gateway != "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid pool request: gateway and ip-range need a subnet"))
		}
		p, err := ipam.NextSubnet(ipam.DefaultPools, append(used, hostPrefixes()...))
		if err != nil {
			return err
		}
		subnet = p
	} else {
		p, err := netip.ParsePrefix(cfg.Subnet)
		if err != nil || !p.Addr().Is4() {
			return errdefs.InvalidParameter(fmt.Errorf("invalid subnet %s : invalid CIDR address: %s", cfg.Subnet, cfg.Subnet))
		}
		if p != p.Masked() {
			return errdefs.InvalidParameter(fmt.Errorf("invalid subnet %s: it should be %s", p, p.Masked()))
		}
		if p.Bits() > 30 {
			return errdefs.InvalidParameter(fmt.Errorf("invalid subnet %s: too small for a network", p))
		}
		for _, u := range used {
			if u.Overlaps(p) {
				return errdefs.Forbidden(fmt.Errorf("invalid pool request: Pool overlaps with other one on this address space"))
			}
		}
		subnet = p
	}
	gw := ipam.FirstHost(subnet)
	if cfg.Gateway != "" {
		g, err := netip.ParseAddr(cfg.Gateway)
		if err != nil || !subnet.Contains(g) {
			return errdefs.InvalidParameter(fmt.Errorf("invalid gateway %s: not in subnet %s", cfg.Gateway, subnet))
		}
		gw = g
	}
	if cfg.IPRange != "" {
		r, err := netip.ParsePrefix(cfg.IPRange)
		if err != nil || !subnet.Contains(r.Addr()) || r.Bits() < subnet.Bits() {
			return errdefs.InvalidParameter(fmt.Errorf("invalid ip-range %s: not within subnet %s", cfg.IPRange, subnet))
		}
		n.IPRange = r.Masked().String()
	}
	n.Subnet, n.Gateway = subnet.String(), gw.String()
	return nil
}

// choosePool6Locked sets n's IPv6 subnet and gateway: the ones asked for,
// checked (an IPv6 prefix, the gateway in it, no overlap with another
// network's), or a unique local /64 derived from the network's ID (Docker
// picks one from fd00::/8 too).
func (c *Controller) choosePool6Locked(n *userNetwork, cfg network.IPAMConfig) error {
	var subnet netip.Prefix
	if cfg.Subnet == "" {
		if cfg.Gateway != "" || cfg.IPRange != "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid pool request: gateway and ip-range need a subnet"))
		}
		b, err := hex.DecodeString(n.ID[:14])
		if err != nil {
			return fmt.Errorf("network ID %s: %w", n.ID, err)
		}
		var a [16]byte
		a[0] = 0xfd
		copy(a[1:8], b)
		subnet = netip.PrefixFrom(netip.AddrFrom16(a), 64)
	} else {
		p, err := netip.ParsePrefix(cfg.Subnet)
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() {
			return errdefs.InvalidParameter(fmt.Errorf("invalid subnet %s : invalid CIDR address: %s", cfg.Subnet, cfg.Subnet))
		}
		if p != p.Masked() {
			return errdefs.InvalidParameter(fmt.Errorf("invalid subnet %s: it should be %s", p, p.Masked()))
		}
		if p.Bits() > 126 {
			return errdefs.InvalidParameter(fmt.Errorf("invalid subnet %s: too small for a network", p))
		}
		subnet = p
	}
	if cfg.IPRange != "" {
		r, err := netip.ParsePrefix(cfg.IPRange)
		if err != nil || !r.Addr().Is6() || !subnet.Contains(r.Addr()) || r.Bits() < subnet.Bits() {
			return errdefs.InvalidParameter(fmt.Errorf("invalid ip-range %s: not within subnet %s", cfg.IPRange, subnet))
		}
		n.IPRange6 = r.Masked().String()
	}
	for _, o := range c.nets {
		if q, err := netip.ParsePrefix(o.Subnet6); err == nil && q.Overlaps(subnet) {
			return errdefs.Forbidden(fmt.Errorf("invalid pool request: Pool overlaps with other one on this address space"))
		}
	}
	gw := subnet.Addr().Next()
	if cfg.Gateway != "" {
		g, err := netip.ParseAddr(cfg.Gateway)
		if err != nil || !subnet.Contains(g) {
			return errdefs.InvalidParameter(fmt.Errorf("invalid gateway %s: not in subnet %s", cfg.Gateway, subnet))
		}
		gw = g
	}
	n.Subnet6, n.Gateway6 = subnet.String(), gw.String()
	return nil
}

// hostPrefixes are the host's addresses and routes, which a network chosen
// from the default pools must not overlap (Docker skips them too).
func hostPrefixes() []netip.Prefix {
	var out []netip.Prefix
	if routes, err := netlink.RouteList(nil, netlink.FAMILY_V4); err == nil {
		for _, r := range routes {
			if r.Dst == nil {
				continue
			}
			ones, _ := r.Dst.Mask.Size()
			if ones == 0 {
				continue // the default route covers everything
			}
			if a, ok := netip.AddrFromSlice(r.Dst.IP.To4()); ok {
				out = append(out, netip.PrefixFrom(a, ones).Masked())
			}
		}
	}
	if addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4); err == nil {
		for _, a := range addrs {
			ones, _ := a.Mask.Size()
			if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && !ip.IsLoopback() {
				out = append(out, netip.PrefixFrom(ip, ones).Masked())
			}
		}
	}
	return out
}

// Remove serves DELETE /networks/{id} for a user-defined network:
// refused (403, Docker's message) while a container is attached.
func (c *Controller) Remove(ctx context.Context, ref string) error {
	n, err := c.userNetwork(ref)
	if err != nil {
		return err
	}
	return c.removeNetwork(n)
}

func (c *Controller) removeNetwork(n *userNetwork) error {
	if eps := c.endpointsOn(n.ID); len(eps) > 0 {
		return errdefs.Forbidden(fmt.Errorf("error while removing network: network %s has active endpoints (%s)", n.Name, strings.Join(eps, ", ")))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nets[n.ID]; !ok {
		return errdefs.NotFound(fmt.Errorf("network %s not found", n.Name))
	}
	delete(c.nets, n.ID)
	if err := c.saveLocked(); err != nil {
		c.nets[n.ID] = n
		return fmt.Errorf("save networks: %w", err)
	}
	if n.br != nil {
		if err := n.br.Destroy(); err != nil {
			slog.Error("network rm: remove its bridge", "network", n.Name, "err", err)
		}
	}
	c.isolateNetworksLocked()
	slog.Info("network removed", "name", n.Name, "id", n.ID[:12])
	c.event(eventtypes.ActionDestroy, n.ID, n.Name, "")
	return nil
}

// endpointsOn describes the containers attached to network netID, as
// Docker's message lists them.
func (c *Controller) endpointsOn(netID string) []string {
	var out []string
	for _, sb := range c.sandboxList() {
		for _, ep := range sb.eps {
			if ep.NetworkID == netID {
				out = append(out, fmt.Sprintf("name:%q id:%q", strings.TrimPrefix(sb.name, "/"), ep.EndpointID[:12]))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Prune serves POST /networks/prune: user-defined networks no container
// is attached to, created before until (if set), whose labels match f's
// label and label! filters (the daemon checked the filters).
func (c *Controller) Prune(ctx context.Context, until time.Time, f filters.Args) (*network.PruneReport, error) {
	rep := &network.PruneReport{NetworksDeleted: []string{}}
	for _, n := range c.userNetworks() {
		if !until.IsZero() && !n.Created.Before(until) {
			continue
		}
		if f.Contains("label") && !f.MatchKVList("label", n.Labels) {
			continue
		}
		if f.Contains("label!") && f.MatchKVList("label!", n.Labels) {
			continue
		}
		if err := c.removeNetwork(n); err != nil {
			continue
		}
		rep.NetworksDeleted = append(rep.NetworksDeleted, n.Name)
	}
	return rep, nil
}

// inspectUserNetwork is GET /networks/{id} for a user-defined network.
func (c *Controller) inspectUserNetwork(n *userNetwork) network.Inspect {
	opts := map[string]string{}
	for k, v := range n.Options {
		opts[k] = v
	}
	labels := n.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	ipamOpts := n.IPAMOpts
	if ipamOpts == nil {
		ipamOpts = map[string]string{}
	}
	ipamCfg := []network.IPAMConfig{{Subnet: n.Subnet, Gateway: n.Gateway, IPRange: n.IPRange}}
	if n.EnableIPv6 {
		ipamCfg = append(ipamCfg, network.IPAMConfig{Subnet: n.Subnet6, Gateway: n.Gateway6, IPRange: n.IPRange6})
	}
	nw := network.Inspect{
		Name: n.Name, ID: n.ID, Created: n.Created, Scope: "local", Driver: "bridge",
		EnableIPv4: true, EnableIPv6: n.EnableIPv6, Internal: n.Internal, Attachable: n.Attachable,
		IPAM:       network.IPAM{Driver: "default", Options: ipamOpts, Config: ipamCfg},
		ConfigFrom: network.ConfigReference{},
		Containers: map[string]network.EndpointResource{},
		Options:    opts,
		Labels:     labels,
	}
	for _, sb := range c.sandboxList() {
		for _, ep := range sb.eps {
			if ep.NetworkID == n.ID {
				nw.Containers[sb.id] = endpointResource(sb.name, ep)
			}
		}
	}
	return nw
}

// ipv6Address is an endpoint's IPv6 address with its length, as network
// inspect shows it ("" without one).
func ipv6Address(ep *Endpoint) string {
	if ep.IPv6Address == "" {
		return ""
	}
	return fmt.Sprintf("%s/%d", ep.IPv6Address, ep.IPv6PrefixLen)
}
