package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/libnetwork/portmap"
	"github.com/sdengine/engine/pkg/errdefs"
)

// The daemon only orchestrates networking: the default bridge, its
// addresses, veths, namespaces and NAT are libnetwork/bridge's. Here: when
// a container is attached (its start) and detached (its exit, a failed
// start, recovery), and what its network files and spec say.

// newBridge sets up the default bridge, unless --bridge none.
func newBridge(cfg *config.Config) (*bridge.Bridge, error) {
	if cfg.BridgeDisabled() {
		return nil, nil
	}
	b, err := bridge.New(bridge.Config{
		Name:      cfg.Bridge,
		BIP:       cfg.BIP,
		FixedCIDR: cfg.FixedCIDR,
		MTU:       cfg.MTU,
		IPForward: cfg.IPForwardEnabled(),
		IPTables:  cfg.IPTablesEnabled(),
		StateDir:  filepath.Join(cfg.Root, "network"),
		NetnsDir:  filepath.Join(cfg.ExecRoot, "netns"),
	})
	if err != nil {
		return nil, fmt.Errorf("default bridge network: %w", err)
	}
	return b, nil
}

// isBridgeMode reports whether the mode is the default bridge's.
func isBridgeMode(m containertypes.NetworkMode) bool {
	return m == "" || m == "default" || m == "bridge"
}

// usesBridge reports whether c is attached to the bridge when it starts.
func (d *Daemon) usesBridge(c *container.Container) bool {
	return d.bridge != nil && isBridgeMode(c.HostConfig.NetworkMode)
}

func sandboxKey(c *container.Container) string {
	if c.Network != nil {
		return c.Network.SandboxKey
	}
	return ""
}

// connectNetwork attaches a bridge container at its start: its address,
// namespace, veth and published ports (c.Network). The caller holds c's
// lock and calls disconnectNetwork if the start fails later.
func (d *Daemon) connectNetwork(c *container.Container, hostname string) error {
	if !d.usesBridge(c) {
		return nil
	}
	reqs, err := portmap.Requests(c.HostConfig.PortBindings, c.Config.ExposedPorts, c.HostConfig.PublishAllPorts)
	if err != nil {
		return err
	}
	ep, err := d.bridge.Attach(c.ID, hostname, reqs)
	if err != nil {
		return fmt.Errorf("driver failed programming external connectivity on endpoint %s (%s): %w", strings.TrimPrefix(c.Name, "/"), c.ID[:12], err)
	}
	c.Network = ep
	return nil
}

// disconnectNetwork releases what connectNetwork gave c. The caller holds
// c's lock.
func (d *Daemon) disconnectNetwork(c *container.Container) {
	if d.bridge == nil || (c.Network == nil && !d.usesBridge(c)) {
		return
	}
	if err := d.bridge.Detach(c.ID); err != nil {
		slog.Error("detach from the bridge network", "id", c.ID, "err", err)
	}
	c.Network = nil
}

// restoreNetwork takes back the networking of a container that kept
// running across a daemon restart. The caller holds c's lock.
func (d *Daemon) restoreNetwork(c *container.Container) {
	if d.bridge == nil || c.Network == nil {
		return
	}
	if err := d.bridge.Restore(c.ID, c.Network); err != nil {
		slog.Error("recovery: restore the network of a running container", "id", c.ID, "err", err)
	}
}

// networkOptions sets the container's network namespace in o: the one the
// bridge made for it, or the one of the container it shares (container:X).
// For container:X it returns the donor's record directory, whose network
// files the container shares.
func (d *Daemon) networkOptions(c *container.Container, o *oci.SpecOptions) error {
	mode := c.HostConfig.NetworkMode
	switch {
	case c.Network != nil:
		o.NetNS, o.NetNSOwned = c.Network.SandboxKey, true
	case mode.IsContainer():
		st, err := d.networkDonor(c)
		if err != nil {
			return err
		}
		switch {
		case st.NetworkMode.IsHost():
			o.NetworkMode = "host"
		case st.SandboxKey != "":
			o.NetNS = st.SandboxKey
		default:
			o.NetNS = nsFile(st.Pid, "net")
		}
	}
	return nil
}

// networkDonor is the running container whose network c shares.
func (d *Daemon) networkDonor(c *container.Container) (donorState, error) {
	ref := c.HostConfig.NetworkMode.ConnectedContainer()
	other, err := d.containers.Get(ref)
	if err != nil {
		return donorState{}, err
	}
	st, err := peek(c, other)
	if err != nil {
		return donorState{}, err
	}
	if !st.Running {
		return donorState{}, errdefs.Conflict(fmt.Errorf("cannot join network namespace of a non running container: %s", st.ID))
	}
	return st, nil
}

// validateNetworkMode refuses at create what Docker refuses for a network
// mode (400), and the published ports it cannot read.
func validateNetworkMode(cfg *containertypes.Config, hc *containertypes.HostConfig) error {
	switch mode := hc.NetworkMode; {
	case isBridgeMode(mode), mode == "none", mode == "host":
	case mode.IsContainer():
		if mode.ConnectedContainer() == "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid network mode %q: no container named", mode))
		}
		if cfg.Hostname != "" {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: hostname and the network mode"))
		}
		if len(hc.PortBindings) > 0 || hc.PublishAllPorts {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: port publishing and the container type network mode"))
		}
		if len(cfg.ExposedPorts) > 0 {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: port exposing and the container type network mode"))
		}
		if len(hc.ExtraHosts) > 0 {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: custom host-to-IP mapping and the network mode"))
		}
		if len(hc.DNS) > 0 {
			return errdefs.InvalidParameter(fmt.Errorf("conflicting options: dns and the network mode"))
		}
	default:
		return errdefs.NotFound(fmt.Errorf("network %s not found", mode))
	}
	if _, err := portmap.Requests(hc.PortBindings, nil, false); err != nil {
		return err
	}
	return nil
}

// donorNetworkFiles copies the network files of the container whose
// network c shares (Docker shares its files; a copy keeps each
// container's files its own to remove). It returns the donor's hostname.
func (d *Daemon) donorNetworkFiles(c *container.Container) (string, error) {
	st, err := d.networkDonor(c)
	if err != nil {
		return "", err
	}
	var hostname string
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		b, err := os.ReadFile(filepath.Join(st.Root, f))
		if err != nil {
			return "", fmt.Errorf("network files of container %s: %w", st.ID, err)
		}
		if f == "hostname" {
			hostname = strings.TrimSpace(string(b))
		}
		if err := os.WriteFile(c.File(f), b, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", f, err)
		}
	}
	return hostname, nil
}
