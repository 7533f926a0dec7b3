package image

import (
	"context"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
)

// NewPruneCommand is "docker image prune": Docker's prompt (unless -f),
// its "Deleted Images:" list and "Total reclaimed space".
func NewPruneCommand(cli *command.Cli) *cobra.Command {
	var all bool
	cmd := command.NewPruneCommand(cli, "Remove unused images", "until=<timestamp>",
		func(f filters.Args) string {
			if all {
				f.Add("dangling", "false")
				return "WARNING! This will remove all images without at least one container associated to them."
			}
			return "WARNING! This will remove all dangling images."
		},
		func(ctx context.Context, c *client.Client, f filters.Args) error {
			rep, err := c.ImagesPrune(ctx, f)
			if err != nil {
				return err
			}
			command.PrintDeletedImages(cli.Out(), rep.ImagesDeleted)
			command.PrintReclaimed(cli.Out(), rep.SpaceReclaimed)
			return nil
		})
	cmd.Flags().BoolVarP(&all, "all", "a", false, "Remove all unused images, not just dangling ones")
	return cmd
}
