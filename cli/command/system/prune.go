package system

import (
	"context"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
)

// NewPruneCommand is "docker system prune": stopped containers, then what
// the engine can prune of networks and dangling images (a part the daemon
// does not have yet is skipped, said on stderr).
func NewPruneCommand(cli *command.Cli) *cobra.Command {
	var all bool
	cmd := command.NewPruneCommand(cli, "Remove unused data", "label=<key>=<value>",
		func(filters.Args) string {
			return "WARNING! This will remove:\n  - all stopped containers\n  - all networks not used by at least one container\n  - all dangling images\n  - unused build cache\n"
		},
		func(ctx context.Context, c *client.Client, f filters.Args) error {
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
		})
	cmd.Flags().BoolVarP(&all, "all", "a", false, "Remove all unused images not just dangling ones")
	return cmd
}
