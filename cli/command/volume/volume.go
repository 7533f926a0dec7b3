// Package volume implements "docker volume": create, ls, inspect, rm,
// prune, on top of the Engine API client.
package volume

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
)

// Commands are the commands of the "docker volume" group.
var Commands = []command.Entry{
	{Names: []string{"create"}, New: newCreateCommand},
	{Names: []string{"ls", "list"}, New: newListCommand},
	{Names: []string{"inspect"}, New: newInspectCommand},
	{Names: []string{"rm", "remove"}, New: newRemoveCommand},
	{Names: []string{"prune"}, New: newPruneCommand},
}

func newCreateCommand(cli *command.Cli) *cobra.Command {
	var name, driver string
	var optFlags, labelFlags []string
	cmd := &cobra.Command{
		Use:   "create [OPTIONS] [VOLUME]",
		Short: "Create a volume",
		Args:  command.RequiresMaxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if name != "" {
					return fmt.Errorf("conflicting options: cannot specify a volume-name through both --name and as a positional arg")
				}
				name = args[0]
			}
			driverOpts, err := opts.ParseKeyValueOpts(optFlags, "opt")
			if err != nil {
				return err
			}
			labels, err := opts.BuildLabels(nil, labelFlags)
			if err != nil {
				return err
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			v, err := c.VolumeCreate(cmd.Context(), volume.CreateOptions{Name: name, Driver: driver, DriverOpts: driverOpts, Labels: labels})
			if err != nil {
				return err
			}
			fmt.Fprintln(cli.Out(), v.Name)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&driver, "driver", "d", "local", "Specify volume driver name")
	fs.StringVar(&name, "name", "", "Specify volume name")
	_ = fs.MarkHidden("name")
	fs.StringArrayVarP(&optFlags, "opt", "o", nil, "Set driver specific options")
	fs.StringArrayVar(&labelFlags, "label", nil, "Set metadata for a volume")
	return cmd
}

func newListCommand(cli *command.Cli) *cobra.Command {
	return command.NewListCommand(cli, command.ListSpec{
		Short:         "List volumes",
		QuietHelp:     "Only display volume names",
		FilterExample: "dangling=true",
		QuietFormat:   formatter.VolumeQuietFormat,
		TableFormat:   formatter.VolumeTableFormat,
		Headers:       formatter.VolumeHeaders,
		List: func(ctx context.Context, c *client.Client, f filters.Args, _ bool) ([]any, error) {
			resp, err := c.VolumeList(ctx, volume.ListOptions{Filters: f})
			if err != nil {
				return nil, err
			}
			items := make([]any, 0, len(resp.Volumes))
			for _, v := range resp.Volumes {
				items = append(items, formatter.Volume{V: v})
			}
			return items, nil
		},
	})
}

func newInspectCommand(cli *command.Cli) *cobra.Command {
	return command.NewInspectCommand(cli, "inspect [OPTIONS] VOLUME [VOLUME...]", "Display detailed information on one or more volumes",
		func(ctx context.Context, c *client.Client, ref string) ([]byte, error) {
			_, raw, err := c.VolumeInspectWithRaw(ctx, ref)
			return raw, err
		})
}

func newRemoveCommand(cli *command.Cli) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "rm [OPTIONS] VOLUME [VOLUME...]",
		Aliases: []string{"remove"},
		Short:   "Remove one or more volumes",
		Args:    command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return command.RemoveEach(cmd.Context(), cli, args, func(ctx context.Context, n string) error {
				return c.VolumeRemove(ctx, n, force)
			}, nil)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Force the removal of one or more volumes")
	return cmd
}

func newPruneCommand(cli *command.Cli) *cobra.Command {
	var all bool
	cmd := command.NewPruneCommand(cli, "Remove unused local volumes", "label=<label>",
		func(f filters.Args) string {
			if all {
				f.Add("all", "true")
				return "WARNING! This will remove all local volumes not used by at least one container."
			}
			return "WARNING! This will remove anonymous local volumes not used by at least one container."
		},
		func(ctx context.Context, c *client.Client, f filters.Args) error {
			report, err := c.VolumesPrune(ctx, f)
			if err != nil {
				return err
			}
			command.PrintDeleted(cli.Out(), "Volumes", report.VolumesDeleted)
			command.PrintReclaimed(cli.Out(), report.SpaceReclaimed)
			return nil
		})
	cmd.Flags().BoolVarP(&all, "all", "a", false, "Remove all unused volumes, not just anonymous ones")
	return cmd
}
