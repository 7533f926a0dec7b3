package libnetwork

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/libnetwork/resolver"
)

// The controller is the engine's network: the default bridge, the
// user-defined networks (usernet.go), the containers attached to them
// (join.go, connect.go) and their embedded DNS (dns.go). The daemon calls
// it by container ID with what the container asked for, and keeps what
// it returns in the container's record; it publishes the events the
// controller reports.

// Config is what the controller needs of the daemon's configuration.
type Config struct {
	// Root is the daemon's data root (leases and network definitions
	// under Root/network); ExecRoot its exec root (namespaces under
	// ExecRoot/netns).
	Root, ExecRoot string
	// The default bridge: none when BridgeDisabled (--bridge none).
	BridgeDisabled bool
	Bridge         string
	BIP            string
	FixedCIDR      string
	IPv6           bool
	FixedCIDRv6    string
	MTU            int
	IPForward      bool
	IPTables       bool
	// HostResolvConf is the file read as the host's resolv.conf
	// (/etc/resolv.conf when empty).
	HostResolvConf string
	// Started is when the daemon started: the builtin networks' Created.
	Started time.Time
	// Events is told of each network created or destroyed and each
	// container connected or disconnected (nil: nobody is).
	Events EventFunc
}

// EventFunc reports a network event: action (create, destroy, connect,
// disconnect) on the network networkID (never empty) called networkName,
// for containerID on a connect or disconnect ("" otherwise).
type EventFunc func(action eventtypes.Action, networkID, networkName, containerID string)

// Controller is the engine's container networking.
type Controller struct {
	cfg Config
	// bridge is the default bridge network; nil with --bridge none.
	bridge *bridge.Bridge

	mu   sync.Mutex
	path string
	nets map[string]*userNetwork // by ID
	// resolvers: the embedded DNS servers, by container ID (under mu).
	resolvers map[string]*resolver.Resolver
	dns       dnsRegistry

	// sbMu guards sandboxes and every change to a sandbox's attachment
	// and request. A container's own operations (Join, Connect,
	// Disconnect, Leave) come one at a time: the daemon holds the
	// container's lock around each.
	sbMu      sync.Mutex
	sandboxes map[string]*sandbox // by container ID
}

// sandbox is one container's hold on the network: what it asked for and
// the endpoints it got.
type sandbox struct {
	req JoinRequest
	att Attachment
}

// Attachment is what a container holds of the network, as its record
// keeps it: the first endpoint (whose namespace the others share; an
// endpoint with no network keeps the namespace alone) and the others by
// network name.
type Attachment struct {
	Network  *Endpoint
	Networks map[string]*Endpoint
}

// Endpoints are the attachment's endpoints: the first network's, then the
// others by name.
func (a Attachment) Endpoints() []*Endpoint {
	var out []*Endpoint
	if a.Network != nil && a.Network.Network != "" {
		out = append(out, a.Network)
	}
	names := make([]string, 0, len(a.Networks))
	for n := range a.Networks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, a.Networks[n])
	}
	return out
}

// SandboxKey is the network namespace's path ("" without one).
func (a Attachment) SandboxKey() string {
	if a.Network != nil {
		return a.Network.SandboxKey
	}
	return ""
}

func (a Attachment) clone() Attachment {
	out := Attachment{Network: a.Network}
	if a.Networks != nil {
		out.Networks = maps.Clone(a.Networks)
	}
	return out
}

// set records the endpoint on the network name: the first or a further
// one. The caller holds sbMu.
func (a *Attachment) set(name string, ep *Endpoint, first bool) {
	if first {
		a.Network = ep
		return
	}
	if a.Networks == nil {
		a.Networks = map[string]*Endpoint{}
	}
	a.Networks[name] = ep
}

// New makes the default bridge (unless disabled) and the user-defined
// networks' bridges.
func New(cfg Config) (*Controller, error) {
	c := &Controller{
		cfg:       cfg,
		path:      filepath.Join(cfg.Root, "network", "networks.json"),
		nets:      map[string]*userNetwork{},
		resolvers: map[string]*resolver.Resolver{},
		dns:       dnsRegistry{byNet: map[string]map[string]dnsEntry{}},
		sandboxes: map[string]*sandbox{},
	}
	br, err := newBridge(cfg)
	if err != nil {
		return nil, err
	}
	c.bridge = br
	if err := c.openNetworks(); err != nil {
		return nil, err
	}
	return c, nil
}

// newBridge sets up the default bridge, unless --bridge none.
func newBridge(cfg Config) (*bridge.Bridge, error) {
	if cfg.BridgeDisabled {
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
		IPForward: cfg.IPForward,
		IPTables:  cfg.IPTables,
		StateDir:  filepath.Join(cfg.Root, "network"),
		NetnsDir:  filepath.Join(cfg.ExecRoot, "netns"),
	})
	if err != nil {
		return nil, fmt.Errorf("default bridge network: %w", err)
	}
	return b, nil
}

// DefaultBridge is the default bridge network (nil with --bridge none).
func (c *Controller) DefaultBridge() *bridge.Bridge { return c.bridge }

func (c *Controller) netnsDir() string { return filepath.Join(c.cfg.ExecRoot, "netns") }

func (c *Controller) event(action eventtypes.Action, netID, netName, containerID string) {
	if netID == "" {
		netID = NetworkID(netName)
	}
	if c.cfg.Events != nil {
		c.cfg.Events(action, netID, netName, containerID)
	}
}

func (c *Controller) endpointEvent(ep *Endpoint, action eventtypes.Action, containerID string) {
	c.event(action, ep.NetworkID, ep.Network, containerID)
}

// Close ends the networks at the daemon's stop: with remove (no container
// left running), every bridge and table goes, and the namespaces'
// directory.
func (c *Controller) Close(remove bool) {
	if c.bridge != nil {
		if err := c.bridge.Close(remove); err != nil {
			slog.Error("remove the bridge network", "err", err)
		}
	}
	c.mu.Lock()
	for _, r := range c.resolvers {
		r.Close()
	}
	for _, n := range c.nets {
		if n.br != nil {
			if err := n.br.Close(remove); err != nil {
				slog.Error("remove a network's bridge", "network", n.Name, "err", err)
			}
		}
	}
	c.mu.Unlock()
	if remove {
		if err := os.Remove(c.netnsDir()); err != nil && !errors.Is(err, os.ErrNotExist) {
			slog.Error("remove the namespaces' directory", "err", err)
		}
	}
}

// Rename gives a container its new name in what the networks show of it.
func (c *Controller) Rename(containerID, name string) {
	c.sbMu.Lock()
	defer c.sbMu.Unlock()
	if sb := c.sandboxes[containerID]; sb != nil {
		sb.req.Name = name
	}
}

func (c *Controller) sandbox(containerID string) *sandbox {
	c.sbMu.Lock()
	defer c.sbMu.Unlock()
	return c.sandboxes[containerID]
}

// sandboxList is a snapshot of the sandboxes: each container's ID, name,
// network mode and endpoints.
type sandboxView struct {
	id, name, mode string
	eps            []*Endpoint
}

func (c *Controller) sandboxList() []sandboxView {
	c.sbMu.Lock()
	defer c.sbMu.Unlock()
	out := make([]sandboxView, 0, len(c.sandboxes))
	for id, sb := range c.sandboxes {
		out = append(out, sandboxView{id: id, name: sb.req.Name, mode: sb.req.NetworkMode, eps: sb.att.Endpoints()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
