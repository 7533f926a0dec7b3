package system

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/command/image"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/spf13/cobra"
)

// NewInspectCommand is the top-level "docker inspect": a name is looked up
// as a container first, then as an image, unless --type says which.
func NewInspectCommand(cli *command.Cli) *cobra.Command {
	var format, typ string
	var size bool
	cmd := &cobra.Command{
		Use:   "inspect [OPTIONS] NAME|ID [NAME|ID...]",
		Short: "Return low-level information on Docker objects",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch typ {
			case "", "container", "image":
			default:
				return errdefs.InvalidParameter(fmt.Errorf("%q is not a valid value for --type", typ))
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return command.Inspect(cli.Out(), cli.Err(), args, format, func(ref string) ([]byte, error) {
				return inspectAny(ctx, c, typ, ref, size)
			})
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "Format output using a custom template")
	cmd.Flags().StringVar(&typ, "type", "", "Only inspect objects of the given type (container, image)")
	cmd.Flags().BoolVarP(&size, "size", "s", false, "Display total file sizes if the type is container")
	return cmd
}

func inspectAny(ctx context.Context, c *client.Client, typ, ref string, size bool) ([]byte, error) {
	if typ == "" || typ == "container" {
		_, raw, err := c.ContainerInspectWithRaw(ctx, ref, size)
		if err == nil || typ == "container" {
			return raw, err
		}
		if !cerrdefs.IsNotFound(err) {
			return nil, err
		}
	}
	raw, err := image.InspectRaw(ctx, c, ref)
	if err == nil || typ == "image" {
		return raw, err
	}
	if cerrdefs.IsNotFound(err) {
		return nil, errdefs.NotFound(fmt.Errorf("Error: No such object: %s", ref))
	}
	return nil, err
}
