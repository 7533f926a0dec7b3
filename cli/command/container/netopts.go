package container

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"
	"github.com/spf13/pflag"

	"github.com/sdengine/engine/pkg/errdefs"
)

// networkOptions are create's and run's network flags: published and
// exposed ports, the endpoint on the network (--network-alias, --ip,
// --mac-address), /etc/hosts and /etc/resolv.conf entries, the domain
// name.
type networkOptions struct {
	publish, expose           []string
	publishAll                bool
	aliases                   []string
	ip, ip6, mac, domainname  string
	addHost                   []string
	dns, dnsSearch, dnsOption []string
	links                     []string
}

func (o *networkOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVarP(&o.publish, "publish", "p", nil, "Publish a container's port(s) to the host")
	fs.BoolVarP(&o.publishAll, "publish-all", "P", false, "Publish all exposed ports to random ports")
	fs.StringSliceVar(&o.expose, "expose", nil, "Expose a port or a range of ports")
	fs.StringSliceVar(&o.aliases, "network-alias", nil, "Add network-scoped alias for the container")
	fs.StringVar(&o.ip, "ip", "", "IPv4 address (e.g., 172.30.100.104)")
	fs.StringVar(&o.ip6, "ip6", "", "IPv6 address (e.g., 2001:db8::33)")
	fs.StringVar(&o.mac, "mac-address", "", "Container MAC address (e.g., 92:d0:c6:0a:29:33)")
	fs.StringVar(&o.domainname, "domainname", "", "Container NIS domain name")
	fs.StringSliceVar(&o.addHost, "add-host", nil, "Add a custom host-to-IP mapping (host:ip)")
	fs.StringSliceVar(&o.dns, "dns", nil, "Set custom DNS servers")
	fs.StringSliceVar(&o.dnsSearch, "dns-search", nil, "Set custom DNS search domains")
	fs.StringSliceVar(&o.dnsOption, "dns-option", nil, "Set DNS options")
	fs.StringSliceVar(&o.links, "link", nil, "Add link to another container")
}

// apply sets the flags in the request and returns its networking config:
// the endpoint settings of the network the container starts on.
func (o *networkOptions) apply(c *container.Config, h *container.HostConfig) (*network.NetworkingConfig, error) {
	exposed, bindings, err := nat.ParsePortSpecs(o.publish)
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid publish opts format: %w", err))
	}
	for _, e := range o.expose {
		proto, ports := nat.SplitProtoPort(e)
		if strings.Contains(ports, ":") {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid range format for --expose: %s, error: Invalid port format", e))
		}
		start, end, err := nat.ParsePortRange(ports)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid range format for --expose: %s, error: %w", e, err))
		}
		for i := start; i <= end; i++ {
			p, err := nat.NewPort(proto, fmt.Sprint(i))
			if err != nil {
				return nil, errdefs.InvalidParameter(err)
			}
			exposed[p] = struct{}{}
		}
	}
	if len(exposed) > 0 {
		c.ExposedPorts = exposed
	}
	if len(bindings) > 0 {
		h.PortBindings = bindings
	}
	h.PublishAllPorts = o.publishAll
	for _, eh := range o.addHost {
		name, ip, ok := strings.Cut(eh, ":")
		if !ok {
			name, ip, ok = strings.Cut(eh, "=")
		}
		if !ok || name == "" {
			return nil, errdefs.InvalidParameter(fmt.Errorf("bad format for add-host: %q", eh))
		}
		if _, err := netip.ParseAddr(strings.Trim(ip, "[]")); err != nil && ip != "host-gateway" {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid IP address in add-host: %q", ip))
		}
		h.ExtraHosts = append(h.ExtraHosts, name+":"+strings.Trim(ip, "[]"))
	}
	for _, d := range o.dns {
		if _, err := netip.ParseAddr(d); err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("%s is not an ip address", d))
		}
	}
	h.DNS, h.DNSSearch, h.DNSOptions = o.dns, o.dnsSearch, o.dnsOption
	h.Links = o.links
	c.Domainname = o.domainname
	if o.mac != "" {
		if _, err := net.ParseMAC(o.mac); err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("%s is not a valid mac address", o.mac))
		}
	}
	nc := &network.NetworkingConfig{}
	if len(o.aliases) > 0 || o.ip != "" || o.ip6 != "" || o.mac != "" {
		mode := string(h.NetworkMode)
		if mode == "default" {
			mode = "bridge"
		}
		es := &network.EndpointSettings{Aliases: o.aliases, MacAddress: o.mac}
		if o.ip != "" {
			if ip, err := netip.ParseAddr(o.ip); err != nil || !ip.Is4() {
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid IPv4 address: %s", o.ip))
			}
			es.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: o.ip}
		}
		if o.ip6 != "" {
			if ip, err := netip.ParseAddr(o.ip6); err != nil || !ip.Is6() || ip.Is4In6() {
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid IPv6 address: %s", o.ip6))
			}
			if es.IPAMConfig == nil {
				es.IPAMConfig = &network.EndpointIPAMConfig{}
			}
			es.IPAMConfig.IPv6Address = o.ip6
		}
		nc.EndpointsConfig = map[string]*network.EndpointSettings{mode: es}
	}
	return nc, nil
}
