package libnetwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Docker's predefined networks: "bridge" (the default bridge, unless
// --bridge none), "host" (the host's network namespace) and "none" (a
// namespace with only lo); the user-defined ones are usernet.go's.
var builtinNetworks = []struct{ name, driver string }{
	{"host", "host"},
	{"none", "null"},
}

// NetworkID is a builtin network's ID: Docker's are random and kept on
// disk; these are derived from the name, so that they are as stable
// without a record.
func NetworkID(name string) string {
	sum := sha256.Sum256([]byte("sdengine network " + name))
	return hex.EncodeToString(sum[:])
}

var networkFilters = map[string]bool{
	"dangling": true, "driver": true, "id": true, "label": true, "name": true, "scope": true, "type": true,
}

// List serves GET /networks: the networks that match the filters, as
// Docker filters them (every builtin network is "builtin", none is
// "custom" or dangling).
func (c *Controller) List(ctx context.Context, f filters.Args) ([]network.Summary, error) {
	if err := f.Validate(networkFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	dangling := false
	if v := f.Get("dangling"); len(v) > 0 {
		if len(v) > 1 {
			return nil, errdefs.InvalidParameter(fmt.Errorf(`got more than one value for filter key "dangling"`))
		}
		switch v[0] {
		case "0", "false":
		case "1", "true":
			dangling = true
		default:
			return nil, errdefs.InvalidParameter(fmt.Errorf(`invalid value for filter 'dangling', must be "true" (or "1"), or "false" (or "0")`))
		}
	}
	builtin, custom := true, true
	if f.Contains("type") {
		builtin, custom = false, false
		for _, t := range f.Get("type") {
			switch t {
			case "builtin":
				builtin = true
			case "custom":
				custom = true
			default:
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid filter: 'type'='%s'", t))
			}
		}
	}
	out := []network.Summary{}
	var all []network.Summary
	if builtin && !dangling {
		for _, n := range c.networks() {
			all = append(all, c.builtinNetwork(n.name, n.driver))
		}
	}
	if custom {
		for _, n := range c.userNetworks() {
			nw := c.inspectUserNetwork(n)
			if dangling && len(nw.Containers) > 0 {
				continue
			}
			// Docker's list leaves the containers out.
			nw.Containers = map[string]network.EndpointResource{}
			all = append(all, nw)
		}
	}
	for _, nw := range all {
		switch {
		case f.Contains("driver") && !f.ExactMatch("driver", nw.Driver),
			f.Contains("name") && !f.Match("name", nw.Name),
			f.Contains("id") && !f.Match("id", nw.ID),
			f.Contains("label") && !f.MatchKVList("label", nw.Labels),
			f.Contains("scope") && !f.ExactMatch("scope", nw.Scope):
			continue
		}
		out = append(out, nw)
	}
	return out, nil
}

// Inspect serves GET /networks/{id}: a network by name, full ID or ID
// prefix, with the containers attached to it.
func (c *Controller) Inspect(ctx context.Context, ref string) (network.Inspect, error) {
	for _, n := range c.networks() {
		id := NetworkID(n.name)
		if ref != n.name && ref != id && (ref == "" || !strings.HasPrefix(id, ref)) {
			continue
		}
		nw := c.builtinNetwork(n.name, n.driver)
		for _, sb := range c.sandboxList() {
			switch {
			case n.name == bridge.NetworkName:
				for _, ep := range sb.eps {
					if ep.NetworkID == "" {
						nw.Containers[sb.id] = endpointResource(sb.name, ep)
					}
				}
			case sb.mode == n.name:
				nw.Containers[sb.id] = network.EndpointResource{Name: strings.TrimPrefix(sb.name, "/")}
			}
		}
		return nw, nil
	}
	n, err := c.userNetwork(ref)
	if err != nil {
		return network.Inspect{}, err
	}
	return c.inspectUserNetwork(n), nil
}

func endpointResource(name string, ep *Endpoint) network.EndpointResource {
	return network.EndpointResource{Name: strings.TrimPrefix(name, "/"),
		EndpointID: ep.EndpointID, MacAddress: ep.MacAddress,
		IPv4Address: fmt.Sprintf("%s/%d", ep.IPAddress, ep.PrefixLen), IPv6Address: ipv6Address(ep)}
}

// networks are the predefined networks: the bridge first when there is one.
func (c *Controller) networks() []struct{ name, driver string } {
	if c.bridge == nil {
		return builtinNetworks
	}
	return append([]struct{ name, driver string }{{bridge.NetworkName, "bridge"}}, builtinNetworks...)
}

func (c *Controller) builtinNetwork(name, driver string) network.Inspect {
	if name == bridge.NetworkName && c.bridge != nil {
		mtu := c.bridge.MTU()
		if mtu == 0 {
			mtu = 1500
		}
		cfgs := []network.IPAMConfig{{Subnet: c.bridge.Subnet().String(), Gateway: c.bridge.Gateway().String(), IPRange: c.bridge.FixedCIDR()}}
		v6 := c.bridge.Subnet6().IsValid()
		if v6 {
			cfgs = append(cfgs, network.IPAMConfig{Subnet: c.bridge.Subnet6().String(), Gateway: c.bridge.Gateway6().String()})
		}
		return network.Inspect{
			Name: name, ID: NetworkID(name), Created: c.cfg.Started, Scope: "local", Driver: driver, EnableIPv4: true, EnableIPv6: v6,
			IPAM:       network.IPAM{Driver: "default", Options: nil, Config: cfgs},
			Containers: map[string]network.EndpointResource{},
			Options: map[string]string{
				"com.docker.network.bridge.default_bridge":       "true",
				"com.docker.network.bridge.enable_icc":           "true",
				"com.docker.network.bridge.enable_ip_masquerade": "true",
				"com.docker.network.bridge.host_binding_ipv4":    "0.0.0.0",
				"com.docker.network.bridge.name":                 c.bridge.Name(),
				"com.docker.network.driver.mtu":                  fmt.Sprint(mtu),
			},
			Labels: map[string]string{},
		}
	}
	return network.Inspect{
		Name:       name,
		ID:         NetworkID(name),
		Created:    c.cfg.Started,
		Scope:      "local",
		Driver:     driver,
		EnableIPv4: true,
		IPAM:       network.IPAM{Driver: "default", Options: map[string]string{}, Config: []network.IPAMConfig{}},
		Containers: map[string]network.EndpointResource{},
		Options:    map[string]string{},
		Labels:     map[string]string{},
	}
}
