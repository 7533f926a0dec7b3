package image

import (
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/runconfig/opts"
)

// NewPruneCommand is "docker image prune": Docker's prompt (unless -f),
// its "Deleted Images:" list and "Total reclaimed space".
func NewPruneCommand(cli *command.Cli) *cobra.Command {
	var all, force bool
	var filterFlags []string
	cmd := &cobra.Command{
		Use:   "prune [OPTIONS]",
		Short: "Remove unused images",
		Args:  command.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			warning := "WARNING! This will remove all dangling images."
			if all {
				f.Add("dangling", "false")
				warning = "WARNING! This will remove all images without at least one container associated to them."
			}
			if !force && !command.Confirm(cli, warning) {
				return nil
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			rep, err := c.ImagesPrune(cmd.Context(), f)
			if err != nil {
				return err
			}
			command.PrintDeletedImages(cli.Out(), rep.ImagesDeleted)
			command.PrintReclaimed(cli.Out(), rep.SpaceReclaimed)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&all, "all", "a", false, "Remove all unused images, not just dangling ones")
	fl.BoolVarP(&force, "force", "f", false, "Do not prompt for confirmation")
	fl.StringArrayVar(&filterFlags, "filter", nil, `Provide filter values (e.g. "until=<timestamp>")`)
	return cmd
}
