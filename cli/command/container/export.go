package container

import (
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
)

// NewExportCommand is "docker export".
func NewExportCommand(cli *command.Cli) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export [OPTIONS] CONTAINER",
		Short: "Export a container's filesystem as a tar archive",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := command.CheckArchiveOutput(cli, output); err != nil {
				return err
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			rc, err := c.ContainerExport(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer rc.Close()
			return command.WriteArchive(cli, output, rc)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Write to a file, instead of STDOUT")
	return cmd
}
