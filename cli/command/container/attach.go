package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/spf13/cobra"
)

// NewAttachCommand is "docker attach".
func NewAttachCommand(cli *command.Cli) *cobra.Command {
	var noStdin, sigProxy bool
	var detachKeys string
	cmd := &cobra.Command{
		Use:   "attach [OPTIONS] CONTAINER",
		Short: "Attach local standard input, output, and error streams to a running container",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			info, err := c.ContainerInspect(ctx, args[0])
			if err != nil {
				return err
			}
			if info.State == nil || !info.State.Running {
				return errdefs.Conflict(errors.New("You cannot attach to a stopped container, start it first"))
			}
			if info.State.Paused {
				return errdefs.Conflict(errors.New("You cannot attach to a paused container, unpause it first"))
			}
			in := !noStdin && info.Config.OpenStdin
			tty := info.Config.Tty
			if in && tty && !cli.In().IsTerminal() {
				return errors.New("the input device is not a TTY")
			}
			hijack, err := c.ContainerAttach(ctx, info.ID, container.AttachOptions{Stream: true, Stdin: in, Stdout: true, Stderr: true, DetachKeys: detachKeys})
			if err != nil {
				return err
			}
			defer hijack.Close()
			if tty && cli.Out().IsTerminal() {
				monitorTTYSize(ctx, cli, func(ctx context.Context, o container.ResizeOptions) error {
					return c.ContainerResize(ctx, info.ID, o)
				})
			}
			if sigProxy && !tty {
				proxySignals(ctx, c, info.ID)
			}
			s := streams{tty: tty, stdout: cli.Out(), stderr: cli.Err()}
			if in {
				s.stdin = cli.In()
			}
			if err := pump(cli, hijack, s); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("streaming: %w", err)
			}
			// The stream ends when the container stops (report its
			// status) or when the daemon saw the detach sequence (the
			// container runs on: nothing to report).
			resC, errC := c.ContainerWait(ctx, info.ID, container.WaitConditionNotRunning)
			select {
			case r := <-resC:
				if r.StatusCode != 0 {
					return command.StatusError{StatusCode: int(r.StatusCode)}
				}
			case err := <-errC:
				return err
			case <-time.After(2 * time.Second):
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&noStdin, "no-stdin", false, "Do not attach STDIN")
	cmd.Flags().BoolVar(&sigProxy, "sig-proxy", true, "Proxy all received signals to the process")
	cmd.Flags().StringVar(&detachKeys, "detach-keys", "", "Override the key sequence for detaching a container")
	return cmd
}
