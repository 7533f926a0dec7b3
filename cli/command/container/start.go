package container

import (
	"context"
	"errors"

	"github.com/sdengine/engine/cli/command"
	"github.com/spf13/cobra"
)

// NewStartCommand is "docker start".
func NewStartCommand(cli *command.Cli) *cobra.Command {
	var attach, interactive bool
	var preserveFds int
	cmd := &cobra.Command{
		Use:   "start [OPTIONS] CONTAINER [CONTAINER...]",
		Short: "Start one or more stopped containers",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			pass, err := command.PassPlan(preserveFds)
			if err == nil {
				err = cli.CheckCanPass(pass)
			}
			if err != nil {
				return err
			}
			if pass.Files > 0 && len(args) > 1 {
				return errors.New("descriptors (socket activation, --preserve-fds) can be passed to one container only")
			}
			if attach || interactive {
				if len(args) > 1 {
					return errors.New("you cannot start and attach multiple containers at once")
				}
				info, err := c.ContainerInspect(ctx, args[0])
				if err != nil {
					return err
				}
				in := interactive && info.Config.OpenStdin
				return attachStartWait(ctx, cli, info.ID, info.Config.Tty, in, attach, attach,
					info.HostConfig.AutoRemove, true, pass, func(err error) error { return err }, nil)
			}
			return forEach(cli, args, func(ctx context.Context, name string) error {
				return startContainer(ctx, cli, name, pass)
			}, cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&attach, "attach", "a", false, "Attach STDOUT/STDERR and forward signals")
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "Attach container's STDIN")
	addPreserveFdsFlag(cmd.Flags(), &preserveFds)
	return cmd
}
