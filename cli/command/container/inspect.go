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

// Commands are the commands of the "docker container" group.
var Commands = []command.Entry{
	{Names: []string{"attach"}, New: NewAttachCommand},
	{Names: []string{"cp"}, New: NewCpCommand},
	{Names: []string{"create"}, New: NewCreateCommand},
	{Names: []string{"exec"}, New: NewExecCommand},
	{Names: []string{"export"}, New: NewExportCommand},
	{Names: []string{"inspect"}, New: NewInspectCommand},
	{Names: []string{"kill"}, New: NewKillCommand},
	{Names: []string{"logs"}, New: NewLogsCommand},
	{Names: []string{"port"}, New: NewPortCommand},
	{Names: []string{"ps", "ls", "list"}, New: NewPsCommand},
	{Names: []string{"restart"}, New: NewRestartCommand},
	{Names: []string{"rm", "remove"}, New: NewRmCommand},
	{Names: []string{"run"}, New: NewRunCommand},
	{Names: []string{"start"}, New: NewStartCommand},
	{Names: []string{"stop"}, New: NewStopCommand},
	{Names: []string{"wait"}, New: NewWaitCommand},
	{Names: []string{"prune"}, New: NewPruneCommand},
	{Names: []string{"pause"}, New: newPauseCommand},
	{Names: []string{"unpause"}, New: newUnpauseCommand},
	{Names: []string{"rename"}, New: newRenameCommand},
	{Names: []string{"update"}, New: newUpdateCommand},
	{Names: []string{"top"}, New: newTopCommand},
	{Names: []string{"stats"}, New: newStatsCommand},
	{Names: []string{"diff"}, New: newDiffCommand},
}

// TopLevelCommands are the container commands docker also offers at the
// top level ("docker run", "docker ps", ...), without their aliases
// ("docker ls" is not a docker command). inspect is not among them: the
// top-level one handles images too; nor is prune.
var TopLevelCommands = command.TopLevel(Commands, "inspect", "prune")
