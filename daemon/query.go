package daemon

import (
	"context"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/libnetwork/portmap"
	"strconv"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/storage"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

var psFilters = map[string]bool{"name": true, "status": true, "label": true, "id": true, "ancestor": true, "exited": true, "before": true, "since": true}

// ContainerList serves `docker ps`.
func (d *Daemon) ContainerList(ctx context.Context, opts backend.ListOptions) ([]*containertypes.Summary, error) {
	if err := opts.Filters.Validate(psFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	for _, s := range opts.Filters.Get("status") {
		switch s {
		case "created", "restarting", "running", "removing", "paused", "exited", "dead":
		default:
			return nil, errdefs.InvalidParameter(errInvalidStatus(s))
		}
	}
	// -n implies -a, and so does asking for a status, as in Docker.
	all := opts.All || opts.Limit > 0 || opts.Filters.Contains("status") || opts.Filters.Contains("exited")
	// before and since name a container (by ID, ID prefix or name; given
	// twice, one of them counts, as in Docker): the list is newest first, so
	// "before" skips up to and including it and "since" stops there.
	var before, since string
	for _, k := range []struct {
		key string
		id  *string
	}{{"before", &before}, {"since", &since}} {
		for _, v := range opts.Filters.Get(k.key) {
			c, err := d.containers.Get(v)
			if err != nil {
				return nil, err
			}
			*k.id = c.ID
		}
	}
	out := []*containertypes.Summary{}
	now := time.Now()
	for _, c := range d.containers.List() {
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
		if before != "" {
			if c.ID == before {
				before = ""
			}
			continue
		}
		if since != "" && c.ID == since {
			break
		}
		c.Lock()
		s, ok := d.summary(c, now, all, opts.Filters)
		c.Unlock()
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

type errInvalidStatus string

func (e errInvalidStatus) Error() string {
	return "invalid filter 'status=" + string(e) + "'"
}

func (d *Daemon) summary(c *container.Container, now time.Time, all bool, f filters.Args) (*containertypes.Summary, bool) {
	if !all && !c.State.Running() {
		return nil, false
	}
	if f.Contains("name") && !f.Match("name", strings.TrimPrefix(c.Name, "/")) {
		return nil, false
	}
	if f.Contains("id") && !f.Match("id", c.ID) {
		return nil, false
	}
	if f.Contains("status") && !f.ExactMatch("status", c.State.Status) {
		return nil, false
	}
	if f.Contains("label") && !f.MatchKVList("label", c.Config.Labels) {
		return nil, false
	}
	if f.Contains("ancestor") && !f.ExactMatch("ancestor", c.Config.Image) && !f.ExactMatch("ancestor", c.ImageID) {
		return nil, false
	}
	if f.Contains("exited") {
		if c.State.Status != container.StatusExited || !f.ExactMatch("exited", strconv.Itoa(c.State.ExitCode)) {
			return nil, false
		}
	}
	cmd := c.Path
	if len(c.Args) > 0 {
		cmd += " " + strings.Join(c.Args, " ")
	}
	s := &containertypes.Summary{
		ID:      c.ID,
		Names:   append([]string{c.Name}, d.containers.LinkNames(c.ID)...),
		Image:   c.Config.Image,
		ImageID: c.ImageID,
		Command: cmd,
		Created: c.Created.Unix(),
		Ports:   []containertypes.Port{},
		Labels:  c.Config.Labels,
		State:   containertypes.ContainerState(c.State.Status),
		Status:  c.State.Summary(now),
		Mounts:  apiMountPoints(mountPointsOf(c)),
		NetworkSettings: &containertypes.NetworkSettingsSummary{
			Networks: map[string]*network.EndpointSettings{},
		},
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.NetworkSettings.Networks = d.inspectNetworkSettings(c).Networks
	if c.Network != nil {
		for _, b := range c.Network.Ports {
			s.Ports = append(s.Ports, containertypes.Port{IP: b.HostIP, PrivatePort: b.ContainerPort, PublicPort: b.HostPort, Type: b.Proto})
		}
	}
	s.HostConfig.NetworkMode = string(c.HostConfig.NetworkMode)
	s.HostConfig.Annotations = c.HostConfig.Annotations
	return s, true
}

// ContainerInspect serves `docker inspect`.
func (d *Daemon) ContainerInspect(ctx context.Context, name string, size bool) (*backend.ContainerInspect, error) {
	c, err := d.containers.Get(name)
	if err != nil {
		return nil, err
	}
	c.Lock()
	defer c.Unlock()
	st := c.State
	fmtTime := func(t time.Time) string {
		if t.IsZero() {
			return "0001-01-01T00:00:00Z"
		}
		return t.Format(time.RFC3339Nano)
	}
	base := &containertypes.ContainerJSONBase{
		ID:      c.ID,
		Created: fmtTime(c.Created),
		Path:    c.Path,
		Args:    c.Args,
		State: &containertypes.State{
			Status:     containertypes.ContainerState(st.Status),
			Running:    st.Running() || st.Restarting(),
			Paused:     st.Status == container.StatusPaused,
			Restarting: st.Restarting(),
			Health:     st.Health,
			Pid:        st.Pid,
			ExitCode:   st.ExitCode,
			Error:      st.Error,
			OOMKilled:  st.OOMKilled,
			Dead:       st.Status == container.StatusDead,
			StartedAt:  fmtTime(st.StartedAt),
			FinishedAt: fmtTime(st.FinishedAt),
		},
		Image:          c.ImageID,
		ResolvConfPath: c.File("resolv.conf"),
		HostnamePath:   c.File("hostname"),
		HostsPath:      c.File("hosts"),
		LogPath:        c.LogPath,
		Name:           c.Name,
		RestartCount:   c.RestartCount,
		Driver:         c.Driver,
		Platform:       "linux",
		HostConfig:     inspectHostConfig(c, d.containers.Links(c)),
		GraphDriver:    storage.DriverData{Name: c.Driver, Data: d.images.RWLayerData(c.ID)},
		ExecIDs:        d.execIDs(c.ID),
	}
	if base.Args == nil {
		base.Args = []string{}
	}
	return &backend.ContainerInspect{
		InspectResponse: &containertypes.InspectResponse{
			ContainerJSONBase: base,
			Mounts:            apiMountPoints(mountPointsOf(c)),
			NetworkSettings:   d.inspectNetworkSettings(c),
		},
		Config: &backend.ConfigWithInit{Config: c.Config, Init: c.InitSystem},
	}, nil
}

// inspectNetworkSettings is inspect's NetworkSettings: the host and none
// modes are networks of their own in Docker, listed by their name with an
// endpoint that has no address; a bridge container is on "bridge", with
// its address, gateway and MAC address (also at the top level, as Docker
// still shows them) while it runs. The caller holds c's lock.
func (d *Daemon) inspectNetworkSettings(c *container.Container) *containertypes.NetworkSettings {
	nets := map[string]*network.EndpointSettings{}
	ns := &containertypes.NetworkSettings{Networks: nets}
	mode := c.HostConfig.NetworkMode
	if mode == "host" || mode == "none" {
		nets[string(mode)] = &network.EndpointSettings{NetworkID: libnetwork.NetworkID(string(mode))}
		return ns
	}
	if mode.IsContainer() {
		return ns
	}
	ns.Ports = portmap.PortMap(nil, c.Config.ExposedPorts)
	// What was asked for, then what is attached (while it runs).
	wanted, _ := d.net.WantedNetworks(string(mode), c.NetworkConfig)
	for _, n := range wanted {
		es := &network.EndpointSettings{NetworkID: libnetwork.NetworkID(bridge.NetworkName)}
		if n.ID != "" {
			es.NetworkID = n.ID
		}
		if n.Settings != nil {
			es.Aliases, es.IPAMConfig, es.DriverOpts, es.Links = n.Settings.Aliases, n.Settings.IPAMConfig, n.Settings.DriverOpts, n.Settings.Links
			es.MacAddress, es.GwPriority = n.Settings.MacAddress, n.Settings.GwPriority
		}
		if n.ID != "" && (string(mode) == n.Name || string(mode) == n.ID) && len(c.HostConfig.Links) > 0 {
			// Docker keeps the links of a user-defined network mode as
			// its endpoint's.
			es.Links = append(append([]string(nil), es.Links...), c.HostConfig.Links...)
		}
		if n.ID != "" {
			es.DNSNames = append([]string{strings.TrimPrefix(c.Name, "/"), c.ID[:12]}, es.Aliases...)
		}
		nets[n.Name] = es
	}
	for _, ep := range containerEndpoints(c) {
		es := nets[ep.Network]
		if es == nil {
			es = &network.EndpointSettings{NetworkID: ep.NetworkID}
			nets[ep.Network] = es
		}
		es.EndpointID, es.Gateway, es.IPAddress, es.IPPrefixLen, es.MacAddress = ep.EndpointID, ep.Gateway, ep.IPAddress, ep.PrefixLen, ep.MacAddress
		es.GlobalIPv6Address, es.GlobalIPv6PrefixLen, es.IPv6Gateway = ep.IPv6Address, ep.IPv6PrefixLen, ep.IPv6Gateway
		es.GwPriority = ep.GwPriority
	}
	if ep := c.Network; ep != nil {
		ns.SandboxKey = ep.SandboxKey
		ns.SandboxID = ep.EndpointID
		ns.Ports = portmap.PortMap(ep.Ports, c.Config.ExposedPorts)
		if ep.NetworkID == "" && ep.Network != "" {
			//lint:ignore SA1019 Docker v28 still shows them (docker inspect -f '{{.NetworkSettings.IPAddress}}')
			ns.EndpointID, ns.Gateway, ns.IPAddress, ns.IPPrefixLen, ns.MacAddress = ep.EndpointID, ep.Gateway, ep.IPAddress, ep.PrefixLen, ep.MacAddress
			//lint:ignore SA1019 as above
			ns.GlobalIPv6Address, ns.GlobalIPv6PrefixLen, ns.IPv6Gateway = ep.IPv6Address, ep.IPv6PrefixLen, ep.IPv6Gateway
		}
	}
	return ns
}
