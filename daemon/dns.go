package daemon

import (
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/libnetwork/resolver"
)

// The embedded DNS (libnetwork/resolver): a container on a user-defined
// network has a server at 127.0.0.11 in its namespace, served by the
// daemon. The names it answers come from this registry, kept apart from
// the containers' locks so that a query never waits on a container's stop
// or start: per network, each attached container's names (its name, short
// ID and aliases on that network) and address.

type dnsEntry struct {
	names []string
	ip    netip.Addr
	// links are the container's legacy links on this network (alias →
	// the linked container's name): names for it alone, as in Docker.
	links map[string]string
}

type dnsRegistry struct {
	mu    sync.RWMutex
	byNet map[string]map[string]dnsEntry // network ID → container ID → entry
}

func (r *dnsRegistry) add(netID, cid string, e dnsEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.byNet[netID]
	if m == nil {
		m = map[string]dnsEntry{}
		r.byNet[netID] = m
	}
	m[cid] = e
}

func (r *dnsRegistry) remove(netID, cid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byNet[netID], cid)
	if len(r.byNet[netID]) == 0 {
		delete(r.byNet, netID)
	}
}

// lookup answers name for container cid: the addresses of the containers
// so called on the networks cid is on, each address once.
func (r *dnsRegistry) lookup(cid, name string) []netip.Addr {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, m := range r.byNet {
		self, ok := m[cid]
		if !ok {
			continue
		}
		name := name
		if target, ok := self.links[name]; ok {
			name = target
		}
		for _, e := range m {
			for _, n := range e.names {
				if n == name && !seen[e.ip] {
					seen[e.ip] = true
					out = append(out, e.ip)
				}
			}
		}
	}
	return out
}

// dnsNames are the names a container answers to on a network: its name,
// its short ID and its aliases there (Docker's DNSNames), and its
// --hostname (Docker's resolver answers a container's own hostname).
func dnsNames(c *container.Container, ep *libnetwork.Endpoint) []string {
	names := []string{strings.TrimPrefix(c.Name, "/"), c.ID[:12]}
	names = append(names, ep.Aliases...)
	if c.Config.Hostname != "" {
		names = append(names, c.Config.Hostname)
	}
	for i := range names {
		names[i] = strings.ToLower(names[i])
	}
	return names
}

// userLinks are c's legacy links on the user-defined network of ep, as
// Docker keeps them: the network mode's network takes HostConfig.Links,
// any network its endpoint settings' Links (network connect --link).
// Alias → the linked container's name, lower case; a link to a container
// that does not exist is kept (it answers once there is one).
func userLinks(c *container.Container, ep *libnetwork.Endpoint) map[string]string {
	var links []string
	if string(c.HostConfig.NetworkMode) == ep.Network || string(c.HostConfig.NetworkMode) == ep.NetworkID {
		links = append(links, c.HostConfig.Links...)
	}
	if es := c.NetworkConfig[ep.Network]; es != nil {
		links = append(links, es.Links...)
	}
	out := map[string]string{}
	for _, l := range links {
		name, alias, err := parseLink(l)
		if err != nil {
			continue
		}
		out[strings.ToLower(alias)] = strings.ToLower(name)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// registerDNS enters c's names on each user-defined network it is on,
// and starts its DNS server if it has none. The caller holds c's lock.
func (d *Daemon) registerDNS(c *container.Container) {
	if d.nets == nil {
		return
	}
	user := false
	for _, ep := range containerEndpoints(c) {
		if ep.NetworkID == "" || ep.IPAddress == "" {
			continue
		}
		user = true
		ip, err := netip.ParseAddr(ep.IPAddress)
		if err != nil {
			continue
		}
		d.nets.dns.add(ep.NetworkID, c.ID, dnsEntry{names: dnsNames(c, ep), ip: ip, links: userLinks(c, ep)})
	}
	if !user || c.Network == nil {
		return
	}
	d.nets.mu.Lock()
	defer d.nets.mu.Unlock()
	if d.nets.resolvers[c.ID] != nil {
		return
	}
	cid := c.ID
	r, err := resolver.Start(c.Network.SandboxKey, d.dnsUpstreams(c), func(name string) []netip.Addr {
		return d.nets.dns.lookup(cid, name)
	})
	if err != nil {
		slog.Error("embedded DNS server", "id", c.ID, "err", err)
		return
	}
	d.nets.resolvers[c.ID] = r
}

// unregisterDNS removes c's names from network netID ("" for all) and,
// with all, stops its DNS server.
func (d *Daemon) unregisterDNS(c *container.Container, netID string) {
	if d.nets == nil {
		return
	}
	if netID != "" {
		d.nets.dns.remove(netID, c.ID)
		return
	}
	d.nets.dns.mu.Lock()
	for id, m := range d.nets.dns.byNet {
		delete(m, c.ID)
		if len(m) == 0 {
			delete(d.nets.dns.byNet, id)
		}
	}
	d.nets.dns.mu.Unlock()
	d.nets.mu.Lock()
	r := d.nets.resolvers[c.ID]
	delete(d.nets.resolvers, c.ID)
	d.nets.mu.Unlock()
	r.Close()
}

// hostResolvConf is the host's resolv.conf (--host-resolv-conf names
// another file, for tests: their upstream is a server of their own).
func (d *Daemon) hostResolvConf() string {
	path := "/etc/resolv.conf"
	if d.cfg != nil && d.cfg.HostResolvConf != "" {
		path = d.cfg.HostResolvConf
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// dnsUpstreams are where c's DNS server forwards what is not a
// container's name: its --dns servers, or the host's resolvers (loopback
// ones included: the daemon reaches them from its side).
func (d *Daemon) dnsUpstreams(c *container.Container) []string {
	if len(c.HostConfig.DNS) > 0 {
		return resolver.Upstreams("nameserver " + strings.Join(c.HostConfig.DNS, "\nnameserver "))
	}
	return resolver.Upstreams(d.hostResolvConf())
}

// usesEmbeddedDNS reports whether c's resolv.conf names the embedded
// server: it is on a user-defined network.
func (d *Daemon) usesEmbeddedDNS(c *container.Container) bool {
	for _, ep := range containerEndpoints(c) {
		if ep.NetworkID != "" {
			return true
		}
	}
	return false
}
