package daemon

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
	"sync"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stringid"
	"github.com/vishvananda/netlink"

	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/libnetwork/ipam"
	"github.com/sdengine/engine/libnetwork/resolver"
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

// netState is the daemon's user-defined networks and the embedded DNS.
type netState struct {
	mu   sync.Mutex
	path string
	nets map[string]*userNetwork // by ID

	dns dnsRegistry
	// resolvers: the embedded DNS servers, by container ID (under mu).
	resolvers map[string]*resolver.Resolver
}

const (
	optBridgeName = "com.docker.network.bridge.name"
	optMTU        = "com.docker.network.driver.mtu"
)

// openNetworks loads the user-defined networks and makes their bridges.
// A network whose bridge cannot be made is kept (containers on it fail
// to start with the reason).
func (d *Daemon) openNetworks() error {
	s := &netState{
		path:      filepath.Join(d.cfg.Root, "network", "networks.json"),
		nets:      map[string]*userNetwork{},
		resolvers: map[string]*resolver.Resolver{},
		dns:       dnsRegistry{byNet: map[string]map[string]dnsEntry{}},
	}
	d.nets = s
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("networks: %w", err)
	}
	var list []*userNetwork
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("networks: %s: %w", s.path, err)
	}
	for _, n := range list {
		if n.br, err = d.newUserBridge(n); err != nil {
			slog.Error("network: make its bridge", "network", n.Name, "err", err)
		}
		s.nets[n.ID] = n
	}
	s.mu.Lock()
	d.isolateNetworksLocked()
	s.mu.Unlock()
	return nil
}

// isolateNetworksLocked gives every bridge of the engine (the default
// one and each network's) the names of the others, so that nothing is
// routed between two networks (as Docker's isolation chains). The caller
// holds d.nets.mu.
func (d *Daemon) isolateNetworksLocked() {
	var all []*bridge.Bridge
	if d.bridge != nil {
		all = append(all, d.bridge)
	}
	for _, n := range d.nets.nets {
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

func (d *Daemon) newUserBridge(n *userNetwork) (*bridge.Bridge, error) {
	sub, err := netip.ParsePrefix(n.Subnet)
	if err != nil {
		return nil, err
	}
	mtu := d.cfg.MTU
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
		IPForward:   d.cfg.IPForwardEnabled() && !n.Internal,
		IPTables:    d.cfg.IPTablesEnabled(),
		StateDir:    filepath.Join(d.cfg.Root, "network"),
		NetnsDir:    d.netnsDir(),
		NetworkName: n.Name,
		NetworkID:   n.ID,
		Internal:    n.Internal,
	})
}

func (d *Daemon) netnsDir() string { return filepath.Join(d.cfg.ExecRoot, "netns") }

// saveLocked writes the definitions; the caller holds s.mu.
func (s *netState) saveLocked() error {
	list := make([]*userNetwork, 0, len(s.nets))
	for _, n := range s.nets {
		list = append(list, n)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Created.Before(list[j].Created) })
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(s.path, b, 0o600)
}

// closeNetworks ends the networks at the daemon's stop: with remove (no
// container left running), every bridge and table goes, and the
// namespaces' directory.
func (d *Daemon) closeNetworks(remove bool) {
	if d.bridge != nil {
		if err := d.bridge.Close(remove); err != nil {
			slog.Error("remove the bridge network", "err", err)
		}
	}
	if d.nets != nil {
		d.nets.mu.Lock()
		for _, r := range d.nets.resolvers {
			r.Close()
		}
		for _, n := range d.nets.nets {
			if n.br != nil {
				if err := n.br.Close(remove); err != nil {
					slog.Error("remove a network's bridge", "network", n.Name, "err", err)
				}
			}
		}
		d.nets.mu.Unlock()
	}
	if remove {
		if err := os.Remove(d.netnsDir()); err != nil && !errors.Is(err, os.ErrNotExist) {
			slog.Error("remove the namespaces' directory", "err", err)
		}
	}
}

// userNet finds a user-defined network by ID, name or ID prefix, in
// Docker's order. The caller holds s.mu.
func (s *netState) findLocked(ref string) (*userNetwork, error) {
	if s == nil || ref == "" {
		return nil, errdefs.NotFound(fmt.Errorf("network %s not found", ref))
	}
	if n, ok := s.nets[ref]; ok {
		return n, nil
	}
	for _, n := range s.nets {
		if n.Name == ref {
			return n, nil
		}
	}
	var found *userNetwork
	for _, n := range s.nets {
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

func (d *Daemon) userNetwork(ref string) (*userNetwork, error) {
	if d.nets == nil {
		return nil, errdefs.NotFound(fmt.Errorf("network %s not found", ref))
	}
	d.nets.mu.Lock()
	defer d.nets.mu.Unlock()
	return d.nets.findLocked(ref)
}

func (d *Daemon) userNetworks() []*userNetwork {
	if d.nets == nil {
		return nil
	}
	d.nets.mu.Lock()
	defer d.nets.mu.Unlock()
	out := make([]*userNetwork, 0, len(d.nets.nets))
	for _, n := range d.nets.nets {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// NetworkCreate serves POST /networks/create for the bridge driver.
func (d *Daemon) NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error) {
	if d.nets == nil {
		return network.CreateResponse{}, errdefs.NotImplemented(fmt.Errorf("networks are not available"))
	}
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
	s := d.nets
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.nets {
		if o.Name == n.Name {
			return network.CreateResponse{}, errdefs.Conflict(fmt.Errorf("network with name %s already exists", n.Name))
		}
		if o.BridgeName == n.BridgeName {
			return network.CreateResponse{}, errdefs.Conflict(fmt.Errorf("bridge name %s is already used by network %s", n.BridgeName, o.Name))
		}
	}
	if err := d.choosePoolLocked(n, cfg); err != nil {
		return network.CreateResponse{}, err
	}
	if n.EnableIPv6 {
		if err := d.choosePool6Locked(n, cfg6); err != nil {
			return network.CreateResponse{}, err
		}
	}
	br, err := d.newUserBridge(n)
	if err != nil {
		return network.CreateResponse{}, fmt.Errorf("create network %s: %w", n.Name, err)
	}
	n.br = br
	s.nets[n.ID] = n
	if err := s.saveLocked(); err != nil {
		delete(s.nets, n.ID)
		_ = br.Destroy()
		return network.CreateResponse{}, fmt.Errorf("save networks: %w", err)
	}
	d.isolateNetworksLocked()
	slog.Info("network created", "name", n.Name, "id", n.ID[:12], "subnet", n.Subnet, "bridge", n.BridgeName)
	d.networkEvent(n.ID, n.Name, eventtypes.ActionCreate, nil)
	return network.CreateResponse{ID: n.ID, Warning: ""}, nil
}

// choosePoolLocked sets n's subnet, gateway and range: the ones asked
// for, checked (within the subnet, no overlap with another network), or
// the next free default pool.
func (d *Daemon) choosePoolLocked(n *userNetwork, cfg network.IPAMConfig) error {
	var used []netip.Prefix
	if d.bridge != nil {
		used = append(used, d.bridge.Subnet())
	}
	for _, o := range d.nets.nets {
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
func (d *Daemon) choosePool6Locked(n *userNetwork, cfg network.IPAMConfig) error {
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
	for _, o := range d.nets.nets {
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

// NetworkRemove serves DELETE /networks/{id} for a user-defined network:
// refused (403, Docker's message) while a container is attached.
func (d *Daemon) NetworkRemove(ctx context.Context, ref string) error {
	n, err := d.userNetwork(ref)
	if err != nil {
		return err
	}
	return d.removeNetwork(n)
}

func (d *Daemon) removeNetwork(n *userNetwork) error {
	if eps := d.endpointsOn(n.ID); len(eps) > 0 {
		return errdefs.Forbidden(fmt.Errorf("error while removing network: network %s has active endpoints (%s)", n.Name, strings.Join(eps, ", ")))
	}
	s := d.nets
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.nets[n.ID]; !ok {
		return errdefs.NotFound(fmt.Errorf("network %s not found", n.Name))
	}
	delete(s.nets, n.ID)
	if err := s.saveLocked(); err != nil {
		s.nets[n.ID] = n
		return fmt.Errorf("save networks: %w", err)
	}
	if n.br != nil {
		if err := n.br.Destroy(); err != nil {
			slog.Error("network rm: remove its bridge", "network", n.Name, "err", err)
		}
	}
	d.isolateNetworksLocked()
	slog.Info("network removed", "name", n.Name, "id", n.ID[:12])
	d.networkEvent(n.ID, n.Name, eventtypes.ActionDestroy, nil)
	return nil
}

// endpointsOn describes the containers attached to network netID, as
// Docker's message lists them.
func (d *Daemon) endpointsOn(netID string) []string {
	var out []string
	for _, c := range d.containers.List() {
		c.Lock()
		for _, ep := range containerEndpoints(c) {
			if ep.NetworkID == netID {
				out = append(out, fmt.Sprintf("name:%q id:%q", strings.TrimPrefix(c.Name, "/"), ep.EndpointID[:12]))
			}
		}
		c.Unlock()
	}
	sort.Strings(out)
	return out
}

var pruneNetworkFilters = map[string]bool{"until": true, "label": true, "label!": true}

// NetworksPrune serves POST /networks/prune: user-defined networks no
// container is attached to.
func (d *Daemon) NetworksPrune(ctx context.Context, f filters.Args) (*network.PruneReport, error) {
	if err := f.Validate(pruneNetworkFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	var until time.Time
	if vs := f.Get("until"); len(vs) > 0 {
		if len(vs) > 1 {
			return nil, errdefs.InvalidParameter(fmt.Errorf("more than one until filter specified"))
		}
		t, err := parseUntil(vs[0])
		if err != nil {
			return nil, errdefs.InvalidParameter(err)
		}
		until = t
	}
	rep := &network.PruneReport{NetworksDeleted: []string{}}
	for _, n := range d.userNetworks() {
		if !until.IsZero() && !n.Created.Before(until) {
			continue
		}
		if f.Contains("label") && !f.MatchKVList("label", n.Labels) {
			continue
		}
		if f.Contains("label!") && f.MatchKVList("label!", n.Labels) {
			continue
		}
		if err := d.removeNetwork(n); err != nil {
			continue
		}
		rep.NetworksDeleted = append(rep.NetworksDeleted, n.Name)
	}
	return rep, nil
}

// inspectUserNetwork is GET /networks/{id} for a user-defined network.
func (d *Daemon) inspectUserNetwork(n *userNetwork) network.Inspect {
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
	for _, c := range d.containers.List() {
		c.Lock()
		for _, ep := range containerEndpoints(c) {
			if ep.NetworkID == n.ID {
				nw.Containers[c.ID] = network.EndpointResource{Name: strings.TrimPrefix(c.Name, "/"),
					EndpointID: ep.EndpointID, MacAddress: ep.MacAddress,
					IPv4Address: fmt.Sprintf("%s/%d", ep.IPAddress, ep.PrefixLen), IPv6Address: ipv6Address(ep)}
			}
		}
		c.Unlock()
	}
	return nw
}

// ipv6Address is an endpoint's IPv6 address with its length, as network
// inspect shows it ("" without one).
func ipv6Address(ep *libnetwork.Endpoint) string {
	if ep.IPv6Address == "" {
		return ""
	}
	return fmt.Sprintf("%s/%d", ep.IPv6Address, ep.IPv6PrefixLen)
}
