package system

import (
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/runconfig/opts"
)

// NewPruneCommand is "docker system prune": stopped containers, then what
// the engine can prune of networks and dangling images (a part the daemon
// does not have yet is skipped, said on stderr).
func NewPruneCommand(cli *command.Cli) *cobra.Command {
	var force, all bool
	var filterFlags []string
	cmd := &cobra.Command{
		Use:   "prune [OPTIONS]",
		Short: "Remove unused data",
		Args:  command.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			if !force && !command.Confirm(cli, "WARNING! This will remove:\n  - all stopped containers\n  - all networks not used by at least one container\n  - all dangling images\n  - unused build cache\n") {
				return nil
			}
			ctx := cmd.Context()
			var reclaimed uint64
			crep, err := c.ContainersPrune(ctx, f)
			if err != nil {
				return err
			}
			if len(crep.ContainersDeleted) > 0 {
				fmt.Fprintln(cli.Out(), "Deleted Containers:")
				for _, id := range crep.ContainersDeleted {
					fmt.Fprintln(cli.Out(), id)
				}
				fmt.Fprintln(cli.Out())
			}
			reclaimed += crep.SpaceReclaimed
			if nrep, err := c.NetworksPrune(ctx, f); err == nil {
				if len(nrep.NetworksDeleted) > 0 {
					fmt.Fprintln(cli.Out(), "Deleted Networks:")
					for _, n := range nrep.NetworksDeleted {
						fmt.Fprintln(cli.Out(), n)
					}
					fmt.Fprintln(cli.Out())
				}
			} else if !cerrdefs.IsNotImplemented(err) {
				return err
			}
			if all {
				f.Add("dangling", "false")
			}
			if irep, err := c.ImagesPrune(ctx, f); err == nil {
				if len(irep.ImagesDeleted) > 0 {
					fmt.Fprintln(cli.Out(), "Deleted Images:")
					for _, d := range irep.ImagesDeleted {
						if d.Untagged != "" {
							fmt.Fprintln(cli.Out(), "untagged:", d.Untagged)
						}
						if d.Deleted != "" {
							fmt.Fprintln(cli.Out(), "deleted:", d.Deleted)
						}
					}
					fmt.Fprintln(cli.Out())
				}
				reclaimed += irep.SpaceReclaimed
			} else if !cerrdefs.IsNotImplemented(err) {
				return err
			}
			fmt.Fprintln(cli.Out(), "Total reclaimed space:", units.HumanSize(float64(reclaimed)))
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Do not prompt for confirmation")
	cmd.Flags().BoolVarP(&all, "all", "a", false, "Remove all unused images not just dangling ones")
	cmd.Flags().StringArrayVar(&filterFlags, "filter", nil, "Provide filter values (e.g. \"label=<key>=<value>\")")
	return cmd
}
