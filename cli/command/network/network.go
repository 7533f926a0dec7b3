// Package network is "docker network": create, ls, inspect, rm, connect,
// disconnect and prune.
package network

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
)

// Commands are the commands of the "docker network" group.
var Commands = []command.Entry{
	{Names: []string{"create"}, New: newCreateCommand},
	{Names: []string{"ls", "list"}, New: newListCommand},
	{Names: []string{"inspect"}, New: newInspectCommand},
	{Names: []string{"rm", "remove"}, New: newRemoveCommand},
	{Names: []string{"connect"}, New: newConnectCommand},
	{Names: []string{"disconnect"}, New: newDisconnectCommand},
	{Names: []string{"prune"}, New: newPruneCommand},
}

func newCreateCommand(cli *command.Cli) *cobra.Command {
	var driver, ipamDriver string
	var subnets, gateways, ipRanges, labels, options, ipamOpts []string
	var internal, attachable, ipv6 bool
	cmd := &cobra.Command{
		Use:   "create [OPTIONS] NETWORK",
		Short: "Create a network",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			if len(gateways) > len(subnets) || len(ipRanges) > len(subnets) {
				return fmt.Errorf("every ip-range or gateway must have a corresponding subnet")
			}
			cfgs, err := ipamConfigs(subnets, gateways, ipRanges)
			if err != nil {
				return err
			}
			ipam := &network.IPAM{Driver: ipamDriver, Options: opts.ConvertKVStringsToMap(ipamOpts), Config: cfgs}
			req := network.CreateOptions{
				Driver: driver, IPAM: ipam, Internal: internal, Attachable: attachable,
				Options: opts.ConvertKVStringsToMap(options), Labels: opts.ConvertKVStringsToMap(labels),
			}
			if cmd.Flags().Changed("ipv6") {
				req.EnableIPv6 = &ipv6
			}
			resp, err := c.NetworkCreate(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			fmt.Fprintln(cli.Out(), resp.ID)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&driver, "driver", "d", "bridge", "Driver to manage the Network")
	fs.StringVar(&ipamDriver, "ipam-driver", "default", "IP Address Management Driver")
	fs.StringSliceVar(&subnets, "subnet", nil, "Subnet in CIDR format that represents a network segment")
	fs.StringSliceVar(&gateways, "gateway", nil, "IPv4 or IPv6 Gateway for the master subnet")
	fs.StringSliceVar(&ipRanges, "ip-range", nil, "Allocate container ip from a sub-range")
	fs.StringArrayVar(&labels, "label", nil, "Set metadata on a network")
	fs.StringArrayVarP(&options, "opt", "o", nil, "Set driver specific options")
	fs.StringArrayVar(&ipamOpts, "ipam-opt", nil, "Set IPAM driver specific options")
	fs.BoolVar(&internal, "internal", false, "Restrict external access to the network")
	fs.BoolVar(&attachable, "attachable", false, "Enable manual container attachment")
	fs.BoolVar(&ipv6, "ipv6", false, "Enable or disable IPv6 networking")
	return cmd
}

// row is one network of "docker network ls", with docker's fields.
type row struct {
	n     network.Summary
	trunc bool
}

func (r row) ID() string {
	if r.trunc && len(r.n.ID) > 12 {
		return r.n.ID[:12]
	}
	return r.n.ID
}
func (r row) Name() string      { return r.n.Name }
func (r row) Driver() string    { return r.n.Driver }
func (r row) Scope() string     { return r.n.Scope }
func (r row) IPv4() string      { return fmt.Sprint(r.n.EnableIPv4) }
func (r row) IPv6() string      { return fmt.Sprint(r.n.EnableIPv6) }
func (r row) Internal() string  { return fmt.Sprint(r.n.Internal) }
func (r row) CreatedAt() string { return r.n.Created.Format("2006-01-02 15:04:05.999999999 -0700 MST") }
func (r row) Labels() string {
	var out []string
	for k, v := range r.n.Labels {
		out = append(out, k+"="+v)
	}
	return strings.Join(out, ",")
}
func (r row) Label(name string) string { return r.n.Labels[name] }

var headers = formatter.Headers{"ID": "NETWORK ID", "Name": "NAME", "Driver": "DRIVER", "Scope": "SCOPE",
	"IPv4": "IPV4", "IPv6": "IPV6", "Internal": "INTERNAL", "CreatedAt": "CREATED AT", "Labels": "LABELS"}

func newListCommand(cli *command.Cli) *cobra.Command {
	return command.NewListCommand(cli, command.ListSpec{
		Short:         "List networks",
		QuietHelp:     "Only display network IDs",
		FilterExample: "driver=bridge",
		NoTrunc:       true,
		QuietFormat:   "{{.ID}}",
		TableFormat:   "table {{.ID}}\t{{.Name}}\t{{.Driver}}\t{{.Scope}}",
		Headers:       headers,
		List: func(ctx context.Context, c *client.Client, f filters.Args, noTrunc bool) ([]any, error) {
			list, err := c.NetworkList(ctx, network.ListOptions{Filters: f})
			if err != nil {
				return nil, err
			}
			items := make([]any, 0, len(list))
			for _, n := range list {
				items = append(items, row{n: n, trunc: !noTrunc})
			}
			return items, nil
		},
	})
}

func newInspectCommand(cli *command.Cli) *cobra.Command {
	return command.NewInspectCommand(cli, "inspect [OPTIONS] NETWORK [NETWORK...]", "Display detailed information on one or more networks",
		func(ctx context.Context, c *client.Client, ref string) ([]byte, error) {
			_, raw, err := c.NetworkInspectWithRaw(ctx, ref, network.InspectOptions{})
			return raw, err
		})
}

func newRemoveCommand(cli *command.Cli) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "rm NETWORK [NETWORK...]",
		Aliases: []string{"remove"},
		Short:   "Remove one or more networks",
		Args:    command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return command.RemoveEach(cmd.Context(), cli, args, c.NetworkRemove, func(err error) bool {
				return force && cerrdefs.IsNotFound(err)
			})
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Do not error if the network does not exist")
	return cmd
}

func newConnectCommand(cli *command.Cli) *cobra.Command {
	var aliases, links, driverOpts []string
	var ip, ip6, mac string
	cmd := &cobra.Command{
		Use:   "connect [OPTIONS] NETWORK CONTAINER",
		Short: "Connect a container to a network",
		Args:  command.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			es := &network.EndpointSettings{Aliases: aliases, Links: links, MacAddress: mac,
				DriverOpts: opts.ConvertKVStringsToMap(driverOpts)}
			if ip != "" || ip6 != "" {
				es.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ip, IPv6Address: ip6}
			}
			return c.NetworkConnect(cmd.Context(), args[0], args[1], es)
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&aliases, "alias", nil, "Add network-scoped alias for the container")
	fs.StringSliceVar(&links, "link", nil, "Add link to another container")
	fs.StringSliceVar(&driverOpts, "driver-opt", nil, "driver options for the network")
	fs.StringVar(&ip, "ip", "", "IPv4 address (e.g., 172.30.100.104)")
	fs.StringVar(&ip6, "ip6", "", "IPv6 address (e.g., 2001:db8::33)")
	fs.StringVar(&mac, "mac-address", "", "MAC address")
	return cmd
}

func newDisconnectCommand(cli *command.Cli) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "disconnect [OPTIONS] NETWORK CONTAINER",
		Short: "Disconnect a container from a network",
		Args:  command.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return c.NetworkDisconnect(cmd.Context(), args[0], args[1], force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Force the container to disconnect from a network")
	return cmd
}

func newPruneCommand(cli *command.Cli) *cobra.Command {
	return command.NewPruneCommand(cli, "Remove all unused networks", "until=<timestamp>",
		func(filters.Args) string {
			return "WARNING! This will remove all custom networks not used by at least one container."
		},
		func(ctx context.Context, c *client.Client, f filters.Args) error {
			rep, err := c.NetworksPrune(ctx, f)
			if err != nil {
				return err
			}
			command.PrintDeleted(cli.Out(), "Networks", rep.NetworksDeleted)
			return nil
		})
}

// ipamConfigs pairs each gateway and ip-range with the subnet that holds
// it, as Docker's CLI does (so that "--subnet V4 --subnet V6 --ip-range
// V6RANGE" gives the range to the IPv6 subnet).
func ipamConfigs(subnets, gateways, ipRanges []string) ([]network.IPAMConfig, error) {
	cfgs := make([]network.IPAMConfig, len(subnets))
	prefixes := make([]netip.Prefix, len(subnets))
	for i, s := range subnets {
		cfgs[i].Subnet = s
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("invalid subnet %s: %w", s, err)
		}
		prefixes[i] = p
	}
	find := func(what, v string, ip netip.Addr) (int, error) {
		for i, p := range prefixes {
			if p.Contains(ip) {
				return i, nil
			}
		}
		return 0, fmt.Errorf("no matching subnet for %s %s", what, v)
	}
	for _, g := range gateways {
		ip, err := netip.ParseAddr(g)
		if err != nil {
			return nil, fmt.Errorf("invalid gateway %s: %w", g, err)
		}
		i, err := find("gateway", g, ip)
		if err != nil {
			return nil, err
		}
		if cfgs[i].Gateway != "" {
			return nil, fmt.Errorf("cannot configure multiple gateways (%s, %s) for the same subnet (%s)", cfgs[i].Gateway, g, subnets[i])
		}
		cfgs[i].Gateway = g
	}
	for _, r := range ipRanges {
		p, err := netip.ParsePrefix(r)
		if err != nil {
			return nil, fmt.Errorf("invalid ip-range %s: %w", r, err)
		}
		i, err := find("range", r, p.Addr())
		if err != nil {
			return nil, err
		}
		if cfgs[i].IPRange != "" {
			return nil, fmt.Errorf("cannot configure multiple ranges (%s, %s) on the same subnet (%s)", cfgs[i].IPRange, r, subnets[i])
		}
		cfgs[i].IPRange = r
	}
	return cfgs, nil
}
