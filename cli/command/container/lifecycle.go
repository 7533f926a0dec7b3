package container

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/sdengine/engine/cli/command"
	"github.com/spf13/cobra"
)

// NewStopCommand is "docker stop".
func NewStopCommand(cli *command.Cli) *cobra.Command {
	return newStopLikeCommand(cli, "stop", "Stop one or more running containers",
		func(ctx context.Context, c *client.Client, name string, o container.StopOptions) error {
			return c.ContainerStop(ctx, name, o)
		})
}

// NewRestartCommand is "docker restart".
func NewRestartCommand(cli *command.Cli) *cobra.Command {
	return newStopLikeCommand(cli, "restart", "Restart one or more containers",
		func(ctx context.Context, c *client.Client, name string, o container.StopOptions) error {
			return c.ContainerRestart(ctx, name, o)
		})
}

// newStopLikeCommand builds stop and restart, which share their flags:
// the signal, then the seconds before SIGKILL.
func newStopLikeCommand(cli *command.Cli, verb, short string,
	do func(ctx context.Context, c *client.Client, name string, o container.StopOptions) error) *cobra.Command {
	var timeout int
	var signal string
	cmd := &cobra.Command{
		Use:   verb + " [OPTIONS] CONTAINER [CONTAINER...]",
		Short: short,
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			o := container.StopOptions{Signal: signal}
			if cmd.Flags().Changed("time") {
				o.Timeout = &timeout
			}
			return forEach(cli, args, func(ctx context.Context, n string) error {
				return do(ctx, c, n, o)
			}, cmd.Context())
		},
	}
	cmd.Flags().IntVarP(&timeout, "time", "t", 0, "Seconds to wait before killing the container")
	cmd.Flags().StringVarP(&signal, "signal", "s", "", "Signal to send to the container")
	return cmd
}

// NewKillCommand is "docker kill".
func NewKillCommand(cli *command.Cli) *cobra.Command {
	var signal string
	cmd := &cobra.Command{
		Use:   "kill [OPTIONS] CONTAINER [CONTAINER...]",
		Short: "Kill one or more running containers",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return forEach(cli, args, func(ctx context.Context, n string) error {
				return c.ContainerKill(ctx, n, signal)
			}, cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&signal, "signal", "s", "", "Signal to send to the container")
	return cmd
}

// NewRmCommand is "docker rm".
func NewRmCommand(cli *command.Cli) *cobra.Command {
	var o container.RemoveOptions
	cmd := &cobra.Command{
		Use:     "rm [OPTIONS] CONTAINER [CONTAINER...]",
		Aliases: []string{"remove"},
		Short:   "Remove one or more containers",
		Args:    command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return forEach(cli, args, func(ctx context.Context, n string) error {
				err := c.ContainerRemove(ctx, n, o)
				if err != nil && o.Force && cerrdefs.IsNotFound(err) {
					// Docker's rm -f: a container that is not there
					// is what was asked for; it is said, not failed.
					return notFailure{err}
				}
				return err
			}, cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.Force, "force", "f", false, "Force the removal of a running container (uses SIGKILL)")
	cmd.Flags().BoolVarP(&o.RemoveVolumes, "volumes", "v", false, "Remove anonymous volumes associated with the container")
	cmd.Flags().BoolVarP(&o.RemoveLinks, "link", "l", false, "Remove the specified link")
	return cmd
}

// NewWaitCommand is "docker wait": print each container's exit status.
func NewWaitCommand(cli *command.Cli) *cobra.Command {
	return &cobra.Command{
		Use:   "wait CONTAINER [CONTAINER...]",
		Short: "Block until one or more containers stop, then print their exit codes",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			// Each wait is its own request, so waiting for all of them at
			// once costs the longest, not the sum; the codes still come
			// in the order of the arguments.
			return forEachOutput(cmd.Context(), cli, args, func(ctx context.Context, n string) (string, error) {
				resC, errC := c.ContainerWait(ctx, n, container.WaitConditionNotRunning)
				select {
				case r := <-resC:
					return fmt.Sprint(r.StatusCode), nil
				case err := <-errC:
					return "", err
				}
			})
		},
	}
}
