// Package bridge is the default bridge network: a Linux bridge (docker0
// unless --bridge says otherwise) with the gateway address, a veth pair per
// container whose inner end is the container's eth0, addresses from
// ipam (leases kept under the data root), and the NAT of nft.go. The daemon
// holds one *Bridge and calls Attach at a container's start, Detach at its
// end, and Restore and Reconcile when it starts again.
package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/libnetwork/ipam"
	"github.com/sdengine/engine/libnetwork/netns"
	"github.com/sdengine/engine/libnetwork/portmap"
	"github.com/sdengine/engine/libnetwork/types"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Defaults, as Docker's.
const (
	DefaultName = "docker0"
	DefaultBIP  = "172.17.0.1/16"
	NetworkName = "bridge"
)

// Config is the bridge's settings (dockerd's --bridge, --bip, ...).
type Config struct {
	Name      string
	BIP       string // gateway address with the subnet's length
	FixedCIDR string // the part of the subnet containers get addresses from
	// FixedCIDRv6 is the part of the IPv6 subnet containers get
	// addresses from (all of it if empty).
	FixedCIDRv6 string
	// BIP6 is the IPv6 gateway address with the subnet's length
	// (fd54:7a1b:8269::1/64): the network has IPv6 too. Empty: IPv4 only.
	BIP6      string
	MTU       int
	IPForward bool   // set net.ipv4.ip_forward (the host's, or the daemon's namespace's)
	IPTables  bool   // write the NAT table
	StateDir  string // on the data root: the leases
	NetnsDir  string // on the exec root: the containers' namespaces
	// NetworkName names the network in the endpoints ("bridge" if empty);
	// NetworkID is set for a user-defined network, whose veths are named
	// from it and the container's ID (the default bridge's from the
	// container's ID alone, as before).
	NetworkName string
	NetworkID   string
	// Internal networks have no outgoing NAT, no default route and no
	// forwarding to or from other interfaces (docker network create
	// --internal).
	Internal bool
}

// Bridge is the default bridge, set up.
type Bridge struct {
	cfg    Config
	subnet netip.Prefix
	gw     netip.Addr
	ipam   *ipam.Allocator
	// IPv6, when the network has it (subnet6 valid).
	subnet6 netip.Prefix
	gw6     netip.Addr
	ipam6   *ipam.Allocator

	mu    sync.Mutex
	ports map[string]attached // by container ID: what the table is written from
	peers []string            // the engine's other bridges, isolated from this one
}

type attached struct {
	ip    netip.Addr
	ports []types.PortBinding
	hold  *portmap.Hold
}

// New makes (or takes over) the bridge and writes its table.
func New(cfg Config) (*Bridge, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.BIP == "" {
		cfg.BIP = DefaultBIP
	}
	if cfg.NetworkName == "" {
		cfg.NetworkName = NetworkName
	}
	bip, err := netip.ParsePrefix(cfg.BIP)
	if err != nil || !bip.Addr().Is4() {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid --bip %q: want an IPv4 address with its prefix length (172.17.0.1/16)", cfg.BIP))
	}
	if len(cfg.Name) > 15 {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid --bridge %q: an interface name is at most 15 characters", cfg.Name))
	}
	pool := bip.Masked()
	if cfg.FixedCIDR != "" {
		pool, err = netip.ParsePrefix(cfg.FixedCIDR)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid --fixed-cidr %q: %w", cfg.FixedCIDR, err))
		}
	}
	b := &Bridge{cfg: cfg, subnet: bip.Masked(), gw: bip.Addr(), ports: map[string]attached{}}
	b.ipam, err = ipam.Open(filepath.Join(cfg.StateDir, cfg.Name+"-leases.json"), bip, pool, bip.Addr())
	if err != nil {
		return nil, err
	}
	if cfg.BIP6 != "" {
		bip6, err := netip.ParsePrefix(cfg.BIP6)
		if err != nil || !bip6.Addr().Is6() || bip6.Addr().Is4In6() {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid IPv6 gateway %q: want an IPv6 address with its prefix length (fd00::1/64)", cfg.BIP6))
		}
		b.subnet6, b.gw6 = bip6.Masked(), bip6.Addr()
		pool6 := bip6.Masked()
		if cfg.FixedCIDRv6 != "" {
			if pool6, err = netip.ParsePrefix(cfg.FixedCIDRv6); err != nil || !b.subnet6.Contains(pool6.Addr()) || pool6.Bits() < b.subnet6.Bits() {
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid IPv6 ip-range %q: not within %s", cfg.FixedCIDRv6, b.subnet6))
			}
		}
		b.ipam6, err = ipam.Open(filepath.Join(cfg.StateDir, cfg.Name+"-leases6.json"), bip6, pool6, bip6.Addr())
		if err != nil {
			return nil, err
		}
	}
	if err := b.setupLink(bip); err != nil {
		return nil, err
	}
	if cfg.IPForward {
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			return nil, fmt.Errorf("enable IP forwarding: %w", err)
		}
	}
	if err := b.writeTable(); err != nil {
		return nil, err
	}
	slog.Info("bridge network ready", "bridge", cfg.Name, "subnet", b.subnet, "gateway", b.gw, "nat", cfg.IPTables)
	return b, nil
}

func (b *Bridge) setupLink(bip netip.Prefix) error {
	l, err := netlink.LinkByName(b.cfg.Name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return fmt.Errorf("bridge %s: %w", b.cfg.Name, err)
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name = b.cfg.Name
		if b.cfg.MTU > 0 {
			attrs.MTU = b.cfg.MTU
		}
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
			return fmt.Errorf("create bridge %s: %w", b.cfg.Name, err)
		}
		if l, err = netlink.LinkByName(b.cfg.Name); err != nil {
			return fmt.Errorf("bridge %s: %w", b.cfg.Name, err)
		}
	} else if l.Type() != "bridge" {
		return errdefs.InvalidParameter(fmt.Errorf("%s exists and is not a bridge (%s)", b.cfg.Name, l.Type()))
	}
	addr := &netlink.Addr{IPNet: ipam.ToNet(bip.Addr(), bip.Bits())}
	if err := netlink.AddrReplace(l, addr); err != nil {
		return fmt.Errorf("address %s on %s: %w", bip, b.cfg.Name, err)
	}
	if b.gw6.IsValid() {
		// The bridge may have been made where IPv6 is off by default.
		if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", b.cfg.Name, "disable_ipv6"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("enable IPv6 on %s: %w", b.cfg.Name, err)
		}
		// No duplicate address detection: the gateway is usable at once,
		// and the subnet is the engine's own.
		a6 := &netlink.Addr{IPNet: ipam.ToNet(b.gw6, b.subnet6.Bits()), Flags: unix.IFA_F_NODAD}
		if err := netlink.AddrReplace(l, a6); err != nil {
			return fmt.Errorf("address %s on %s: %w", b.cfg.BIP6, b.cfg.Name, err)
		}
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up: %w", b.cfg.Name, err)
	}
	// 127.0.0.1 may be DNATed to the bridge (published ports on loopback).
	if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", b.cfg.Name, "route_localnet"), []byte("1"), 0o644); err != nil {
		return fmt.Errorf("route_localnet on %s: %w", b.cfg.Name, err)
	}
	return nil
}

// Name, Subnet and Gateway describe the network (GET /networks).
func (b *Bridge) Name() string               { return b.cfg.Name }
func (b *Bridge) Subnet() netip.Prefix       { return b.subnet }
func (b *Bridge) Gateway() netip.Addr        { return b.gw }
func (b *Bridge) FixedCIDR() string          { return b.cfg.FixedCIDR }
func (b *Bridge) MTU() int                   { return b.cfg.MTU }
func (b *Bridge) NetnsPath(id string) string { return filepath.Join(b.cfg.NetnsDir, id[:12]) }

// Subnet6 and Gateway6 are the network's IPv6 subnet and gateway (not
// valid on an IPv4-only network).
func (b *Bridge) Subnet6() netip.Prefix { return b.subnet6 }
func (b *Bridge) Gateway6() netip.Addr  { return b.gw6 }

func (b *Bridge) writeTable() error {
	if !b.cfg.IPTables {
		return nil
	}
	ports := map[netip.Addr][]types.PortBinding{}
	for _, a := range b.ports {
		ports[a.ip] = append(ports[a.ip], a.ports...)
	}
	return writeTable(b.cfg.Name, b.subnet, !b.cfg.Internal, b.cfg.Internal, b.peers, ports)
}

// SetPeers isolates the network from the engine's other bridges (by
// interface name): nothing is routed from this bridge to them. The daemon
// calls it on every bridge whenever a network comes or goes.
func (b *Bridge) SetPeers(peers []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.peers = append([]string(nil), peers...)
	sort.Strings(b.peers)
	return b.writeTable()
}

// vethName is the host's end of a container's pair, from its ID (and the
// network's, on a user-defined network), so that a restarted daemon knows
// whose a veth is.
func (b *Bridge) vethName(id string) string {
	if b.cfg.NetworkID == "" {
		return "veth" + id[:11]
	}
	sum := sha256.Sum256([]byte(b.cfg.NetworkID + " " + id))
	return "veth" + hex.EncodeToString(sum[:])[:11]
}

// Internal reports whether the network is --internal.
func (b *Bridge) Internal() bool { return b.cfg.Internal }

// AttachOptions say how a container joins the network.
type AttachOptions struct {
	// NetnsPath is the container's network namespace, made by the caller.
	NetnsPath string
	// IfName is the interface's name in it (eth0, eth1, ...).
	IfName string
	// IP is the address asked for (--ip); the next free one if invalid.
	IP netip.Addr
	// IP6 is the IPv6 address asked for (--ip6), on a network with IPv6.
	IP6 netip.Addr
	// MAC is the address asked for (--mac-address); Docker's from the IP
	// if empty.
	MAC string
	// DefaultRoute: the container's default route goes through this
	// network's gateway (its first network; never on an internal one).
	DefaultRoute bool
	Ports        []portmap.Request
	Aliases      []string
	GwPriority   int
}

// Attach gives container id an address on the network, its interface in
// the namespace at o.NetnsPath and the published ports it asks for. On an
// error, nothing of it is left.
func (b *Bridge) Attach(id string, o AttachOptions) (ep *types.Endpoint, retErr error) {
	var mac net.HardwareAddr
	if o.MAC != "" {
		m, err := net.ParseMAC(o.MAC)
		if err != nil || len(m) != 6 {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid MAC address: %s", o.MAC))
		}
		mac = m
	}
	if o.IfName == "" {
		o.IfName = "eth0"
	}
	// Ports first: a port already taken fails before anything is made.
	bindings, hold, err := portmap.Reserve(o.Ports)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			hold.Close()
		}
	}()
	ip, err := b.ipam.Allocate(id, o.IP)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			if err := b.ipam.Release(id); err != nil {
				slog.Error("release address after a failed attach", "id", id, "err", err)
			}
		}
	}()
	if err := hold.Serve(ip); err != nil {
		return nil, err
	}
	var ip6 netip.Addr
	if b.ipam6 != nil {
		if ip6, err = b.ipam6.Allocate(id, o.IP6); err != nil {
			return nil, err
		}
		defer func() {
			if retErr != nil {
				if err := b.ipam6.Release(id); err != nil {
					slog.Error("release IPv6 address after a failed attach", "id", id, "err", err)
				}
			}
		}()
	} else if o.IP6.IsValid() {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid endpoint settings: an IPv6 address (%s) on network %s, which has no IPv6", o.IP6, b.cfg.NetworkName))
	}
	nsPath := o.NetnsPath
	defer func() {
		if retErr != nil {
			if l, err := netlink.LinkByName(b.vethName(id)); err == nil {
				_ = netlink.LinkDel(l)
			}
		}
	}()
	if mac == nil {
		mac = macFor(ip)
	}
	if err := b.plumb(id, nsPath, o.IfName, ip, ip6, mac, o.DefaultRoute && !b.cfg.Internal); err != nil {
		return nil, err
	}
	ep = &types.Endpoint{
		Network:    b.cfg.NetworkName,
		NetworkID:  b.cfg.NetworkID,
		IfName:     o.IfName,
		Aliases:    o.Aliases,
		EndpointID: endpointID(b.cfg.NetworkID + id),
		IPAddress:  ip.String(),
		PrefixLen:  b.subnet.Bits(),
		Gateway:    b.gw.String(),
		MacAddress: mac.String(),
		HostVeth:   b.vethName(id),
		SandboxKey: nsPath,
		Ports:      bindings,
	}
	ep.GwPriority, ep.Internal = o.GwPriority, b.cfg.Internal
	if ip6.IsValid() {
		ep.IPv6Address, ep.IPv6PrefixLen, ep.IPv6Gateway = ip6.String(), b.subnet6.Bits(), b.gw6.String()
	}
	b.mu.Lock()
	b.ports[id] = attached{ip: ip, ports: bindings, hold: hold}
	err = b.writeTable()
	if err != nil {
		delete(b.ports, id)
	}
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// plumb makes the veth pair, moves its inner end into the namespace as
// eth0 with the address and the default route, and sets lo up there.
func (b *Bridge) plumb(id, nsPath, ifName string, ip, ip6 netip.Addr, mac net.HardwareAddr, defaultRoute bool) error {
	br, err := netlink.LinkByName(b.cfg.Name)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", b.cfg.Name, err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = b.vethName(id)
	attrs.MasterIndex = br.Attrs().Index
	attrs.MTU = br.Attrs().MTU
	peer := "vtmp" + strings.TrimPrefix(attrs.Name, "veth")
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: peer}); err != nil {
		return fmt.Errorf("create veth %s: %w", attrs.Name, err)
	}
	ns, err := netns.Open(nsPath)
	if err != nil {
		return err
	}
	defer ns.Close()
	pl, err := netlink.LinkByName(peer)
	if err != nil {
		return fmt.Errorf("veth peer %s: %w", peer, err)
	}
	if err := netlink.LinkSetNsFd(pl, int(ns)); err != nil {
		return fmt.Errorf("move %s into the container's netns: %w", peer, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in the container's netns: %w", err)
	}
	defer h.Close()
	if lo, err := h.LinkByName("lo"); err == nil {
		if err := h.LinkSetUp(lo); err != nil {
			return fmt.Errorf("set lo up: %w", err)
		}
	}
	eth, err := h.LinkByName(peer)
	if err != nil {
		return fmt.Errorf("veth peer in netns: %w", err)
	}
	if err := h.LinkSetName(eth, ifName); err != nil {
		return fmt.Errorf("rename %s to %s: %w", peer, ifName, err)
	}
	if err := h.LinkSetHardwareAddr(eth, mac); err != nil {
		return fmt.Errorf("%s MAC address: %w", ifName, err)
	}
	if err := h.AddrAdd(eth, &netlink.Addr{IPNet: ipam.ToNet(ip, b.subnet.Bits())}); err != nil {
		return fmt.Errorf("%s address %s: %w", ifName, ip, err)
	}
	if ip6.IsValid() {
		if err := netns.Sysctl(nsPath, "net/ipv6/conf/"+ifName+"/disable_ipv6", "0"); err != nil {
			return err
		}
		if err := h.AddrAdd(eth, &netlink.Addr{IPNet: ipam.ToNet(ip6, b.subnet6.Bits()), Flags: unix.IFA_F_NODAD}); err != nil {
			return fmt.Errorf("%s address %s: %w", ifName, ip6, err)
		}
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("set %s up: %w", ifName, err)
	}
	if defaultRoute {
		if err := SetDefaultRoutes(h, eth.Attrs().Index, b.gw, b.gw6); err != nil {
			return err
		}
	}
	host, err := netlink.LinkByName(b.vethName(id))
	if err != nil {
		return fmt.Errorf("veth %s: %w", b.vethName(id), err)
	}
	// Hairpin: a container reaching its own published port through the
	// host comes back by the port it left.
	if err := netlink.LinkSetHairpin(host, true); err != nil {
		return fmt.Errorf("hairpin on %s: %w", b.vethName(id), err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return fmt.Errorf("set %s up: %w", b.vethName(id), err)
	}
	return nil
}

// SetDefaultRoutes makes the default routes of a container's namespace
// (h) go through the interface ifIndex to gw (IPv4) and gw6 (IPv6, if
// valid), replacing the ones there were.
func SetDefaultRoutes(h *netlink.Handle, ifIndex int, gw, gw6 netip.Addr) error {
	return setDefaultRoutes(h, ifIndex, gw, ifIndex, gw6)
}

// SetGateways makes the container's default routes (namespace h) those
// of the interfaces given: IPv4 to gw by ifIndex, IPv6 to gw6 by
// ifIndex6; a family whose gateway is not valid has no default route.
func SetGateways(h *netlink.Handle, ifIndex int, gw netip.Addr, ifIndex6 int, gw6 netip.Addr) error {
	for fam, want := range map[int]bool{netlink.FAMILY_V4: gw.IsValid(), netlink.FAMILY_V6: gw6.IsValid()} {
		if want {
			continue
		}
		routes, err := h.RouteList(nil, fam)
		if err != nil {
			return fmt.Errorf("list routes: %w", err)
		}
		for _, r := range routes {
			if r.Dst == nil || r.Dst.IP.IsUnspecified() && maskZero(r.Dst.Mask) {
				if err := h.RouteDel(&r); err != nil {
					return fmt.Errorf("delete the default route: %w", err)
				}
			}
		}
	}
	return setDefaultRoutes(h, ifIndex, gw, ifIndex6, gw6)
}

func maskZero(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

func setDefaultRoutes(h *netlink.Handle, ifIndex int, gw netip.Addr, ifIndex6 int, gw6 netip.Addr) error {
	if gw.IsValid() {
		r := &netlink.Route{LinkIndex: ifIndex, Gw: net.IP(gw.AsSlice()), Dst: &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}}
		if err := h.RouteReplace(r); err != nil {
			return fmt.Errorf("default route via %s: %w", gw, err)
		}
	}
	if gw6.IsValid() {
		r := &netlink.Route{LinkIndex: ifIndex6, Gw: net.IP(gw6.AsSlice()), Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}}
		if err := h.RouteReplace(r); err != nil {
			return fmt.Errorf("default route via %s: %w", gw6, err)
		}
	}
	return nil
}

// macFor is Docker's MAC address for an IPv4 address: 02:42 and the address.
func macFor(ip netip.Addr) net.HardwareAddr {
	a := ip.As4()
	return net.HardwareAddr{0x02, 0x42, a[0], a[1], a[2], a[3]}
}

func endpointID(id string) string {
	sum := sha256.Sum256([]byte("sdengine endpoint " + id))
	return hex.EncodeToString(sum[:])
}

// Detach releases what Attach gave container id: its ports and rules, its
// veth (and with it the interface in the container) and its address. Each
// step is done even if another failed, and repeating it is harmless. The
// namespace is the caller's.
func (b *Bridge) Detach(id string) error {
	var errs []error
	b.mu.Lock()
	a, ok := b.ports[id]
	delete(b.ports, id)
	if ok && len(a.ports) > 0 {
		errs = append(errs, b.writeTable())
	}
	b.mu.Unlock()
	a.hold.Close()
	if l, err := netlink.LinkByName(b.vethName(id)); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", b.vethName(id), err))
		}
	}
	errs = append(errs, b.ipam.Release(id))
	if b.ipam6 != nil {
		errs = append(errs, b.ipam6.Release(id))
	}
	return errors.Join(errs...)
}

// Restore takes back a container that kept running while no daemon was
// there: its address stays leased to it, its ports held and published.
func (b *Bridge) Restore(id string, ep *types.Endpoint) error {
	ip, err := netip.ParseAddr(ep.IPAddress)
	if err != nil {
		return fmt.Errorf("endpoint of %s: %w", id, err)
	}
	if b.subnet.Contains(ip) {
		if _, err := b.ipam.Allocate(id, ip); err != nil {
			return err
		}
	}
	if ip6, err := netip.ParseAddr(ep.IPv6Address); err == nil && b.ipam6 != nil && b.subnet6.Contains(ip6) {
		if _, err := b.ipam6.Allocate(id, ip6); err != nil {
			return err
		}
	}
	hold, err := portmap.Rebind(ep.Ports)
	if err != nil {
		slog.Warn("recovery: a published port of a running container is taken", "id", id, "err", err)
		hold = &portmap.Hold{}
	}
	if err := hold.Serve(ip); err != nil {
		slog.Warn("recovery: serving an IPv6 published port", "id", id, "err", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ports[id] = attached{ip: ip, ports: ep.Ports, hold: hold}
	return nil
}

// Reconcile runs at start, once every running container is Restored: it
// writes the table from them (dropping the rules of containers gone), and
// releases leases and veths nobody running holds (namespaces are the
// daemon's).
func (b *Bridge) Reconcile() error {
	b.mu.Lock()
	keep := map[string]bool{}
	for id := range b.ports {
		keep[id] = true
	}
	err := b.writeTable()
	b.mu.Unlock()
	var errs []error
	errs = append(errs, err)
	for _, a := range []*ipam.Allocator{b.ipam, b.ipam6} {
		if a == nil {
			continue
		}
		for _, owner := range a.Owners() {
			if !keep[owner] {
				slog.Info("recovery: releasing the address of a container no longer running", "id", owner)
				errs = append(errs, a.Release(owner))
			}
		}
	}
	short := map[string]bool{}
	for id := range keep {
		short[b.vethName(id)] = true
	}
	if links, err := netlink.LinkList(); err == nil {
		br, _ := netlink.LinkByName(b.cfg.Name)
		for _, l := range links {
			n := l.Attrs().Name
			if br == nil || l.Attrs().MasterIndex != br.Attrs().Index || !strings.HasPrefix(n, "veth") || short[n] {
				continue
			}
			slog.Info("recovery: removing a veth no running container holds", "veth", n)
			errs = append(errs, netlink.LinkDel(l))
		}
	}
	return errors.Join(errs...)
}

// Attached lists the containers attached (or restored), sorted.
func (b *Bridge) Attached() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.ports))
	for id := range b.ports {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Destroy removes a user-defined network for good (docker network rm):
// the bridge, its table and its leases.
func (b *Bridge) Destroy() error {
	err := b.Close(true)
	for _, f := range []string{"-leases.json", "-leases6.json"} {
		if rerr := os.Remove(filepath.Join(b.cfg.StateDir, b.cfg.Name+f)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// Close ends the bridge at the daemon's stop: with remove (no container is
// left running), the table and the bridge go;
// otherwise the ports are only let go of by this process, the rules stay
// for the containers that keep running.
func (b *Bridge) Close(remove bool) error {
	b.mu.Lock()
	for _, a := range b.ports {
		a.hold.Close()
	}
	b.mu.Unlock()
	if !remove {
		return nil
	}
	var errs []error
	if b.cfg.IPTables {
		errs = append(errs, deleteTable(b.cfg.Name))
	}
	if l, err := netlink.LinkByName(b.cfg.Name); err == nil {
		errs = append(errs, netlink.LinkDel(l))
	}
	return errors.Join(errs...)
}

// HostResolvConf is the host's resolv.conf for a container on the bridge:
// its nameservers without loopback ones (unreachable from the container),
// and Docker's fallback of Google's public resolvers if none is left.
func HostResolvConf(content string) string {
	var out []string
	ns := 0
	for _, line := range strings.Split(content, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if ip, err := netip.ParseAddr(strings.Split(f[1], "%")[0]); err == nil && ip.IsLoopback() {
				continue
			}
			ns++
		}
		out = append(out, line)
	}
	s := strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n"
	if ns == 0 {
		s += "nameserver 8.8.8.8\nnameserver 8.8.4.4\n"
	}
	return strings.TrimLeft(s, "\n")
}
