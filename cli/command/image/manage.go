package image

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/sdengine/engine/cli/command"
	"github.com/spf13/cobra"
)

// NewTagCommand is "docker tag".
func NewTagCommand(cli *command.Cli) *cobra.Command {
	return &cobra.Command{
		Use:   "tag SOURCE_IMAGE[:TAG] TARGET_IMAGE[:TAG]",
		Short: "Create a tag TARGET_IMAGE that refers to SOURCE_IMAGE",
		Args:  command.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return c.ImageTag(cmd.Context(), args[0], args[1])
		},
	}
}

// NewRmiCommand is "docker rmi" (also "docker image rm").
func NewRmiCommand(cli *command.Cli) *cobra.Command {
	var force, noPrune bool
	cmd := &cobra.Command{
		Use:     "rmi [OPTIONS] IMAGE [IMAGE...]",
		Aliases: []string{"rm", "remove"},
		Short:   "Remove one or more images",
		Args:    command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			failed := false
			for _, ref := range args {
				dels, err := c.ImageRemove(cmd.Context(), ref, image.RemoveOptions{Force: force, PruneChildren: !noPrune})
				if err != nil {
					fmt.Fprintln(cli.Err(), err)
					failed = true
					continue
				}
				for _, d := range dels {
					if d.Untagged != "" {
						fmt.Fprintf(cli.Out(), "Untagged: %s\n", d.Untagged)
					}
					if d.Deleted != "" {
						fmt.Fprintf(cli.Out(), "Deleted: %s\n", d.Deleted)
					}
				}
			}
			if failed {
				return command.StatusError{StatusCode: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Force removal of the image")
	cmd.Flags().BoolVar(&noPrune, "no-prune", false, "Do not delete untagged parents")
	return cmd
}

// NewInspectCommand is "docker image inspect".
func NewInspectCommand(cli *command.Cli) *cobra.Command {
	return command.NewInspectCommand(cli, "inspect [OPTIONS] IMAGE [IMAGE...]", "Display detailed information on one or more images", InspectRaw)
}

// InspectRaw returns an image's inspect JSON as the daemon sent it.
func InspectRaw(ctx context.Context, c *client.Client, ref string) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := c.ImageInspect(ctx, ref, client.ImageInspectWithRawResponse(&buf)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Commands are the commands of the "docker image" group.
var Commands = []command.Entry{
	{Names: []string{"ls", "list", "images"}, New: newLsCommand},
	{Names: []string{"rm", "remove", "rmi"}, New: newRmCommand},
	{Names: []string{"import"}, New: NewImportCommand},
	{Names: []string{"load"}, New: NewLoadCommand},
	{Names: []string{"save"}, New: NewSaveCommand},
	{Names: []string{"tag"}, New: NewTagCommand},
	{Names: []string{"inspect"}, New: NewInspectCommand},
	{Names: []string{"pull"}, New: NewPullCommand},
	{Names: []string{"push"}, New: NewPushCommand},
	{Names: []string{"build"}, New: NewBuildCommand},
	{Names: []string{"history"}, New: NewHistoryCommand},
	{Names: []string{"prune"}, New: NewPruneCommand},
}

// newLsCommand is "docker image ls", "docker images" under its group name.
func newLsCommand(cli *command.Cli) *cobra.Command {
	ls := NewImagesCommand(cli)
	ls.Use = "ls [OPTIONS] [REPOSITORY[:TAG]]"
	ls.Aliases = []string{"list", "images"}
	return ls
}

// newRmCommand is "docker image rm", "docker rmi" under its group name.
func newRmCommand(cli *command.Cli) *cobra.Command {
	rm := NewRmiCommand(cli)
	rm.Use = "rm [OPTIONS] IMAGE [IMAGE...]"
	rm.Aliases = []string{"remove", "rmi"}
	return rm
}

// TopLevelCommands are the image commands docker offers at the top level,
// without their aliases: the group's, with "images" and "rmi" for its ls
// and rm (inspect and prune at the top level are other commands), and
// the registry commands, which have no group here.
var TopLevelCommands = slices.Concat(command.TopLevel(Commands, "ls", "rm", "inspect", "prune"), []command.Entry{
	{Names: []string{"images"}, New: NewImagesCommand},
	{Names: []string{"rmi"}, New: NewRmiCommand},
	{Names: []string{"commit"}, New: NewCommitCommand},
	{Names: []string{"login"}, New: NewLoginCommand},
	{Names: []string{"logout"}, New: NewLogoutCommand},
	{Names: []string{"search"}, New: NewSearchCommand},
})
