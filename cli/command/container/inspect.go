package container

import (
	"github.com/sdengine/engine/cli/command"
	"github.com/spf13/cobra"
)

// NewInspectCommand is "docker container inspect".
func NewInspectCommand(cli *command.Cli) *cobra.Command {
	var format string
	var size bool
	cmd := &cobra.Command{
		Use:   "inspect [OPTIONS] CONTAINER [CONTAINER...]",
		Short: "Display detailed information on one or more containers",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return command.Inspect(cli.Out(), cli.Err(), args, format, func(ref string) ([]byte, error) {
				_, raw, err := c.ContainerInspectWithRaw(cmd.Context(), ref, size)
				return raw, err
			})
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "Format output using a custom template")
	cmd.Flags().BoolVarP(&size, "size", "s", false, "Display total file sizes")
	return cmd
}

// Commands returns the container commands for the "docker container" group.
func Commands(cli *command.Cli) []*cobra.Command {
	return append([]*cobra.Command{
		NewAttachCommand(cli), NewCpCommand(cli), NewCreateCommand(cli), NewExecCommand(cli), NewExportCommand(cli), NewInspectCommand(cli),
		NewKillCommand(cli), NewLogsCommand(cli), NewPortCommand(cli), NewPsCommand(cli), NewRestartCommand(cli),
		NewRmCommand(cli), NewRunCommand(cli), NewStartCommand(cli), NewStopCommand(cli),
		NewWaitCommand(cli), NewPruneCommand(cli),
	}, RuntimeCommands(cli)...)
}

// TopLevelCommands returns the container commands docker also offers at the
// top level ("docker run", "docker ps", ...). inspect is not among them:
// the top-level one handles images too.
func TopLevelCommands(cli *command.Cli) []*cobra.Command {
	cmds := []*cobra.Command{
		NewAttachCommand(cli), NewCpCommand(cli), NewCreateCommand(cli), NewExecCommand(cli), NewExportCommand(cli),
		NewKillCommand(cli), NewLogsCommand(cli), NewPortCommand(cli), NewPsCommand(cli), NewRestartCommand(cli),
		NewRmCommand(cli), NewRunCommand(cli), NewStartCommand(cli), NewStopCommand(cli),
		NewWaitCommand(cli),
	}
	cmds = append(cmds, RuntimeCommands(cli)...)
	for _, c := range cmds {
		c.Aliases = nil // "docker ls" is not a docker command
	}
	return cmds
}
