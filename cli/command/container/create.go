package container

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/runconfig/opts"
	"github.com/spf13/cobra"
)

// NewCreateCommand is "docker create" (also "docker container create").
func NewCreateCommand(cli *command.Cli) *cobra.Command {
	var o containerOptions
	cmd := &cobra.Command{
		Use:   "create [OPTIONS] IMAGE [COMMAND] [ARG...]",
		Short: "Create a new container",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := o.parse(cmd.Flags(), args)
			if err != nil {
				return command.RunFailure(cmd, err)
			}
			c, err := cli.Client()
			if err != nil {
				return command.RunFailure(cmd, err)
			}
			resp, err := createContainerWithInit(cmd.Context(), c, p, o.name)
			if err != nil {
				return command.RunFailure(cmd, err)
			}
			printWarnings(cli, resp.Warnings)
			fmt.Fprintln(cli.Out(), resp.ID)
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	o.addFlags(cmd.Flags())
	return cmd
}

// createContainerWithInit posts /containers/create itself rather than via
// client.ContainerCreate, because the body may carry this engine's
// Config.Init ("systemd") which container.Config cannot hold. Config's
// fields sit at the top level of the create body, so Init does too; the
// daemon reports it back under "Config" in inspect.
func createContainerWithInit(ctx context.Context, c *client.Client, p *parsed, name string) (container.CreateResponse, error) {
	var resp container.CreateResponse
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	body := opts.CreateRequest{ContainerConfig: p.config, HostConfig: p.host, NetworkingConfig: p.network}
	data, err := command.RawRequest(ctx, c, "POST", "/containers/create", q, body)
	if err != nil {
		return resp, err
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return resp, fmt.Errorf("decoding create response: %w", err)
	}
	return resp, nil
}

func printWarnings(cli *command.Cli, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(cli.Err(), "WARNING: %s\n", w)
	}
}
