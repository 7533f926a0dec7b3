package system

import (
	cerrdefs "github.com/containerd/errdefs"
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
			command.PrintDeleted(cli.Out(), "Containers", crep.ContainersDeleted)
			reclaimed += crep.SpaceReclaimed
			if nrep, err := c.NetworksPrune(ctx, f); err == nil {
				command.PrintDeleted(cli.Out(), "Networks", nrep.NetworksDeleted)
			} else if !cerrdefs.IsNotImplemented(err) {
				return err
			}
			if all {
				f.Add("dangling", "false")
			}
			if irep, err := c.ImagesPrune(ctx, f); err == nil {
				command.PrintDeletedImages(cli.Out(), irep.ImagesDeleted)
				reclaimed += irep.SpaceReclaimed
			} else if !cerrdefs.IsNotImplemented(err) {
				return err
			}
			command.PrintReclaimed(cli.Out(), reclaimed)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Do not prompt for confirmation")
	cmd.Flags().BoolVarP(&all, "all", "a", false, "Remove all unused images not just dangling ones")
	cmd.Flags().StringArrayVar(&filterFlags, "filter", nil, "Provide filter values (e.g. \"label=<key>=<value>\")")
	return cmd
}
