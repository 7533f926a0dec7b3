package daemon

import (
	"context"
	"fmt"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/pkg/errdefs"
)

// The network API: the networks are libnetwork's controller (d.net);
// here the daemon hands it the requests, and for connect and disconnect
// what the container's record says, and keeps what changes in the record.

// NetworkList serves GET /networks.
func (d *Daemon) NetworkList(ctx context.Context, f filters.Args) ([]network.Summary, error) {
	return d.net.List(ctx, f)
}

// NetworkInspect serves GET /networks/{id}.
func (d *Daemon) NetworkInspect(ctx context.Context, ref string) (network.Inspect, error) {
	return d.net.Inspect(ctx, ref)
}

// NetworkCreate serves POST /networks/create.
func (d *Daemon) NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error) {
	return d.net.Create(ctx, req)
}

// NetworkRemove serves DELETE /networks/{id}: refused (403) while a
// container is attached.
func (d *Daemon) NetworkRemove(ctx context.Context, ref string) error {
	return d.net.Remove(ctx, ref)
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
	return d.net.Prune(ctx, until, f)
}

// NetworkConnect serves POST /networks/{id}/connect: a running container
// gets an interface on the network at once (its next ethN), a stopped one
// joins it at its next start; either way the record keeps the settings.
func (d *Daemon) NetworkConnect(ctx context.Context, ref, name string, es *network.EndpointSettings) error {
	if err := d.net.CheckConnect(ref); err != nil {
		return err
	}
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	if es == nil {
		es = &network.EndpointSettings{}
	}
	c.Lock()
	defer c.Unlock()
	switch mode := c.HostConfig.NetworkMode; {
	case mode == "host", mode.IsContainer():
		return errdefs.InvalidParameter(fmt.Errorf("container sharing network namespace with another container or host cannot be connected to any other network"))
	case mode == "none":
		return errdefs.InvalidParameter(fmt.Errorf("container cannot be connected to multiple networks with one of the networks in private (none) mode"))
	}
	running := c.State.Status == container.StatusRunning || c.State.Status == container.StatusPaused
	res, err := d.net.Connect(ctx, libnetwork.ConnectRequest{
		ContainerID: c.ID, Name: c.Name, Ref: ref, Settings: es,
		Running: running, Configured: c.NetworkConfig,
	})
	if err != nil {
		return err
	}
	if running {
		c.Network, c.Networks = res.Attachment.Network, res.Attachment.Networks
	}
	if c.NetworkConfig == nil {
		c.NetworkConfig = map[string]*network.EndpointSettings{}
	}
	c.NetworkConfig[res.Network] = es.Copy()
	return c.SaveLocked()
}

// NetworkDisconnect serves POST /networks/{id}/disconnect: the container's
// interface on the network goes (while it runs), and the record forgets
// the network.
func (d *Daemon) NetworkDisconnect(ctx context.Context, ref, name string, force bool) error {
	netName, nerr := d.net.NetworkName(ref)
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	c.Lock()
	defer c.Unlock()
	if nerr != nil {
		netName = ref
	}
	if c.HostConfig.NetworkMode == "host" && (ref == "host" || ref == libnetwork.NetworkID("host")) {
		return errdefs.InvalidParameter(fmt.Errorf("container cannot be disconnected from host network or connected to host network"))
	}
	running := c.State.Status == container.StatusRunning || c.State.Status == container.StatusPaused
	if nerr != nil && !(force && !running) {
		return nerr
	}
	if !running {
		if _, ok := c.NetworkConfig[netName]; !ok && string(c.HostConfig.NetworkMode) != netName {
			return fmt.Errorf("container %s is not connected to the network %s", c.ID, netName)
		}
		delete(c.NetworkConfig, netName)
		return c.SaveLocked()
	}
	att, err := d.net.Disconnect(ctx, c.ID, ref)
	if err != nil {
		return err
	}
	c.Network, c.Networks = att.Network, att.Networks
	delete(c.NetworkConfig, netName)
	return c.SaveLocked()
}

// networkEvents publishes what the controller reports.
func (d *Daemon) networkEvents(action eventtypes.Action, id, name, containerID string) {
	var extra map[string]string
	if containerID != "" {
		extra = map[string]string{"container": containerID}
	}
	d.networkEvent(id, name, action, extra)
}
