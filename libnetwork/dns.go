package libnetwork

import (
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"

	"github.com/sdengine/engine/libnetwork/resolver"
)

// The embedded DNS (libnetwork/resolver): a container on a user-defined
// network has a server at 127.0.0.11 in its namespace, served by the
// controller (in the daemon's process). The names it answers come from this registry, kept apart from
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
func dnsNames(req *JoinRequest, ep *Endpoint) []string {
	names := []string{strings.TrimPrefix(req.Name, "/"), req.ContainerID[:12]}
	names = append(names, ep.Aliases...)
	if req.Hostname != "" {
		names = append(names, req.Hostname)
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
func userLinks(req *JoinRequest, ep *Endpoint) map[string]string {
	var links []string
	if req.NetworkMode == ep.Network || req.NetworkMode == ep.NetworkID {
		links = append(links, req.Links...)
	}
	if es := req.EndpointsConfig[ep.Network]; es != nil {
		links = append(links, es.Links...)
	}
	out := map[string]string{}
	for _, l := range links {
		name, alias, err := ParseLink(l)
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

// registerDNS enters sb's names on each user-defined network it is on,
// and starts its DNS server if it has none. The caller holds the
// container's lock (the daemon's).
func (c *Controller) registerDNS(sb *sandbox) {
	req := &sb.req
	user := false
	for _, ep := range sb.att.Endpoints() {
		if ep.NetworkID == "" || ep.IPAddress == "" {
			continue
		}
		user = true
		ip, err := netip.ParseAddr(ep.IPAddress)
		if err != nil {
			continue
		}
		c.dns.add(ep.NetworkID, req.ContainerID, dnsEntry{names: dnsNames(req, ep), ip: ip, links: userLinks(req, ep)})
	}
	if !user || sb.att.Network == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resolvers[req.ContainerID] != nil {
		return
	}
	cid := req.ContainerID
	r, err := resolver.Start(sb.att.Network.SandboxKey, c.dnsUpstreams(req.DNS), func(name string) []netip.Addr {
		return c.dns.lookup(cid, name)
	})
	if err != nil {
		slog.Error("embedded DNS server", "id", cid, "err", err)
		return
	}
	c.resolvers[cid] = r
}

// unregisterDNS removes the container's names from network netID ("" for
// all) and, with all, stops its DNS server.
func (c *Controller) unregisterDNS(containerID, netID string) {
	if netID != "" {
		c.dns.remove(netID, containerID)
		return
	}
	c.dns.mu.Lock()
	for id, m := range c.dns.byNet {
		delete(m, containerID)
		if len(m) == 0 {
			delete(c.dns.byNet, id)
		}
	}
	c.dns.mu.Unlock()
	c.mu.Lock()
	r := c.resolvers[containerID]
	delete(c.resolvers, containerID)
	c.mu.Unlock()
	r.Close()
}

// HostResolvConf is the host's resolv.conf (Config.HostResolvConf names
// another file, for tests: their upstream is a server of their own).
func (c *Controller) HostResolvConf() string {
	path := "/etc/resolv.conf"
	if c.cfg.HostResolvConf != "" {
		path = c.cfg.HostResolvConf
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// dnsUpstreams are where a container's DNS server forwards what is not a
// container's name: its --dns servers, or the host's resolvers (loopback
// ones included: the daemon reaches them from its side).
func (c *Controller) dnsUpstreams(dns []string) []string {
	if len(dns) > 0 {
		return resolver.Upstreams("nameserver " + strings.Join(dns, "\nnameserver "))
	}
	return resolver.Upstreams(c.HostResolvConf())
}

// UsesEmbeddedDNS reports whether the container's resolv.conf names the
// embedded server: it is on a user-defined network.
func (c *Controller) UsesEmbeddedDNS(containerID string) bool {
	sb := c.sandbox(containerID)
	if sb == nil {
		return false
	}
	c.sbMu.Lock()
	defer c.sbMu.Unlock()
	for _, ep := range sb.att.Endpoints() {
		if ep.NetworkID != "" {
			return true
		}
	}
	return false
}
