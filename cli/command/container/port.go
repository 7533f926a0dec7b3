package container

import (
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/docker/go-connections/nat"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
)

// NewPortCommand is "docker port": the container's published ports, or
// where one of them is published.
func NewPortCommand(cli *command.Cli) *cobra.Command {
	return &cobra.Command{
		Use:   "port CONTAINER [PRIVATE_PORT[/PROTO]]",
		Short: "List port mappings or a specific mapping for the container",
		Args:  command.RequiresRangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctr, err := c.ContainerInspect(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var ports nat.PortMap
			if ctr.NetworkSettings != nil {
				ports = ctr.NetworkSettings.Ports
			}
			if len(args) == 2 {
				port, proto, _ := strings.Cut(args[1], "/")
				if proto == "" {
					proto = "tcp"
				}
				p, err := nat.NewPort(proto, port)
				if err != nil {
					return err
				}
				bs, ok := ports[p]
				if !ok || len(bs) == 0 {
					return fmt.Errorf("no public port '%s' published for %s", p, args[0])
				}
				for _, b := range bs {
					fmt.Fprintln(cli.Out(), net.JoinHostPort(b.HostIP, b.HostPort))
				}
				return nil
			}
			var lines []string
			for p, bs := range ports {
				for _, b := range bs {
					lines = append(lines, fmt.Sprintf("%s -> %s", p, net.JoinHostPort(b.HostIP, b.HostPort)))
				}
			}
			sort.Strings(lines)
			for _, l := range lines {
				fmt.Fprintln(cli.Out(), l)
			}
			return nil
		},
	}
}
