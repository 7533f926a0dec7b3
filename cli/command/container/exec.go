package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/runconfig/opts"
	"github.com/spf13/cobra"
)

// NewExecCommand is "docker exec"; its exit status is the process's.
func NewExecCommand(cli *command.Cli) *cobra.Command {
	var interactive, tty, detach, privileged bool
	var env, envFile []string
	var user, workdir string
	cmd := &cobra.Command{
		Use:   "exec [OPTIONS] CONTAINER COMMAND [ARG...]",
		Short: "Execute a command in a running container",
		Args:  command.RequiresMinArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			envs, err := opts.BuildEnv(envFile, env)
			if err != nil {
				return err
			}
			if tty && interactive && !detach && !cli.In().IsTerminal() {
				return errors.New("the input device is not a TTY")
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			eo := container.ExecOptions{
				User: user, Privileged: privileged, Tty: tty, Env: envs, WorkingDir: workdir,
				Cmd:         args[1:],
				AttachStdin: interactive && !detach, AttachStdout: !detach, AttachStderr: !detach,
			}
			if tty && cli.Out().IsTerminal() {
				// Sized at creation so the command sees it from the start.
				h, w := cli.Out().TerminalSize()
				eo.ConsoleSize = &[2]uint{h, w}
			}
			created, err := c.ContainerExecCreate(ctx, args[0], eo)
			if err != nil {
				return err
			}
			if detach {
				return c.ContainerExecStart(ctx, created.ID, container.ExecStartOptions{Detach: true, Tty: tty})
			}
			hijack, err := c.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: tty})
			if err != nil {
				return err
			}
			defer hijack.Close()
			if tty && cli.Out().IsTerminal() {
				monitorTTYSize(ctx, cli, func(ctx context.Context, o container.ResizeOptions) error {
					return c.ContainerExecResize(ctx, created.ID, o)
				})
			}
			s := streams{tty: tty, stdout: cli.Out(), stderr: cli.Err()}
			if interactive {
				s.stdin = cli.In()
			}
			if err := pump(cli, hijack, s); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("streaming: %w", err)
			}
			ins, err := execExitStatus(ctx, c, created.ID)
			if err != nil {
				return err
			}
			if ins.ExitCode != 0 {
				return command.StatusError{StatusCode: ins.ExitCode}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	fs.BoolVarP(&interactive, "interactive", "i", false, "Keep STDIN open even if not attached")
	fs.BoolVarP(&tty, "tty", "t", false, "Allocate a pseudo-TTY")
	fs.BoolVarP(&detach, "detach", "d", false, "Detached mode: run command in the background")
	fs.BoolVar(&privileged, "privileged", false, "Give extended privileges to the command")
	fs.StringArrayVarP(&env, "env", "e", nil, "Set environment variables")
	fs.StringArrayVar(&envFile, "env-file", nil, "Read in a file of environment variables")
	fs.StringVarP(&user, "user", "u", "", "Username or UID (format: \"<name|uid>[:<group|gid>]\")")
	fs.StringVarP(&workdir, "workdir", "w", "", "Working directory inside the container")
	fs.String("detach-keys", "", "Override the key sequence for detaching a container (not supported)")
	return cmd
}

// execExitStatus reads the exec's exit code. The output stream can end a
// moment before the daemon records the exit, so a still-running exec is
// polled briefly before giving up.
func execExitStatus(ctx context.Context, c *client.Client, id string) (container.ExecInspect, error) {
	var ins container.ExecInspect
	var err error
	for i := 0; i < 50; i++ {
		ins, err = c.ContainerExecInspect(ctx, id)
		if err != nil || !ins.Running {
			return ins, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ins, nil
}
