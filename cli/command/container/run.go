package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/notifymsg"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NewRunCommand is "docker run" (also "docker container run").
func NewRunCommand(cli *command.Cli) *cobra.Command {
	var o containerOptions
	var detach, rm, sigProxy bool
	var sdnotifyMode string
	var preserveFds int
	cmd := &cobra.Command{
		Use:   "run [OPTIONS] IMAGE [COMMAND] [ARG...]",
		Short: "Create and run a new container from an image",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runContainer(cmd, cli, &o, args, detach, rm, sigProxy, sdnotifyMode, preserveFds)
		},
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	fs.BoolVarP(&detach, "detach", "d", false, "Run container in background and print container ID")
	fs.BoolVar(&rm, "rm", false, "Automatically remove the container and its associated anonymous volumes when it exits")
	fs.BoolVar(&sigProxy, "sig-proxy", true, "Proxy received signals to the process")
	fs.StringVar(&sdnotifyMode, "sdnotify", "", "Under a Type=notify systemd unit: what to tell it (container|conmon|healthy|ignore; default conmon)")
	addPreserveFdsFlag(fs, &preserveFds)
	o.addFlags(fs)
	return cmd
}

func runContainer(cmd *cobra.Command, cli *command.Cli, o *containerOptions, args []string, detach, rm, sigProxy bool, sdnotifyMode string, preserveFds int) error {
	if detach && len(o.attach) > 0 {
		return command.RunFailure(cmd, errdefs.InvalidParameter(errors.New("conflicting options: cannot specify both --attach and --detach")))
	}
	if err := checkSdnotifyMode(sdnotifyMode); err != nil {
		return command.RunFailure(cmd, err)
	}
	p, err := o.parse(cmd.Flags(), args)
	if err != nil {
		return command.RunFailure(cmd, err)
	}
	if sdnotifyMode == sdnotifyContainer {
		// The container gets a notify socket, systemd in it or not.
		if p.config.Labels == nil {
			p.config.Labels = map[string]string{}
		}
		p.config.Labels[notifymsg.Label] = "true"
	}
	relay := newNotifyRelay(sdnotifyMode)
	if detach {
		// Nothing is attached in the background.
		p.config.AttachStdin, p.config.AttachStdout, p.config.AttachStderr, p.config.StdinOnce = false, false, false, false
	}
	if !detach && p.config.Tty && p.config.AttachStdin && !cli.In().IsTerminal() {
		return command.RunFailure(cmd, errors.New("the input device is not a TTY"))
	}
	p.host.AutoRemove = rm
	if rm && !p.host.RestartPolicy.IsNone() {
		// The stock CLI's check and message, before any request.
		return command.RunFailure(cmd, errors.New("Conflicting options: --restart and --rm"))
	}
	if p.config.Tty && cli.Out().IsTerminal() {
		// The pty gets its size at creation, so the first command in the
		// container already sees it (a later resize would race with it).
		h, w := cli.Out().TerminalSize()
		p.host.ConsoleSize = [2]uint{h, w}
	}
	c, err := cli.Client()
	if err != nil {
		return command.RunFailure(cmd, err)
	}
	if !detach {
		// Run by a systemd service: the container's scope is tied to it,
		// and in container mode gets the unit's watchdog.
		e := hostUnitEnv(c.DaemonHost())
		p.config.Labels = bindToService(p.config.Labels, e)
		if relay != nil && relay.mode == sdnotifyContainer {
			p.config.Env = withUnitWatchdog(p.config.Env, e)
		}
	}
	// Descriptors for the container (socket activation, --preserve-fds)
	// that cannot be passed are an error before anything is created.
	pass, err := command.PassPlan(preserveFds)
	if err == nil {
		err = cli.CheckCanPass(pass)
	}
	if err != nil {
		return command.RunFailure(cmd, err)
	}
	ctx := cmd.Context()
	resp, err := createContainerWithInit(ctx, c, p, o.name)
	if err != nil {
		return command.RunFailure(cmd, err)
	}
	printWarnings(cli, resp.Warnings)
	id := resp.ID

	if detach {
		if err := startContainer(ctx, cli, id, pass); err != nil {
			return runStartFailure(cmd, err)
		}
		// In the background only conmon's READY=1 can be told: nothing
		// stays to relay the container's own notifications.
		if relay != nil && relay.mode == sdnotifyConmon {
			relay.started()
		}
		fmt.Fprintln(cli.Out(), id)
		return nil
	}
	return attachStartWait(ctx, cli, id, p.config.Tty, p.config.AttachStdin, p.config.AttachStdout, p.config.AttachStderr, rm, sigProxy, pass,
		func(err error) error { return runStartFailure(cmd, err) }, relay)
}

// attachStartWait is the foreground part shared by "run" and "start -a":
// attach first so no output is lost, register the wait before starting so
// a quick exit is not missed, start, stream, and return the exit status.
// fail words attach/start errors for the calling command.
//
// relay, when not nil, tells the systemd unit that started the CLI about
// the container (--sdnotify), and a SIGTERM or SIGINT then stops the
// container with its own stop signal and timeout (systemctl stop).
func attachStartWait(ctx context.Context, cli *command.Cli, id string, tty, in, out, errOut, autoRemove, sigProxy bool, pass fdpass.Request, fail func(error) error, relay *notifyRelay) error {
	c, err := cli.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	s := streams{tty: tty}
	if in {
		s.stdin = cli.In()
	}
	if out {
		s.stdout = cli.Out()
	}
	if errOut {
		s.stderr = cli.Err()
		if tty {
			// A tty merges stderr into stdout on the container side.
			s.stderr = cli.Out()
		}
	}
	hijack, err := c.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: in, Stdout: out, Stderr: errOut})
	if err != nil {
		return fail(err)
	}
	defer hijack.Close()

	statusC := waitExit(ctx, c, id, autoRemove)
	relay.watch(ctx, c, id, time.Now())
	if err := startContainer(ctx, cli, id, pass); err != nil {
		return fail(err)
	}
	relay.started()
	if tty && cli.Out().IsTerminal() {
		monitorTTYSize(ctx, cli, func(ctx context.Context, o container.ResizeOptions) error {
			return c.ContainerResize(ctx, id, o)
		})
	}
	switch {
	case relay != nil:
		stopOnSignal(ctx, c, id, relay)
	case sigProxy && !tty:
		proxySignals(ctx, c, id)
	}
	if err := pump(cli, hijack, s); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("streaming: %w", err)
	}
	if code := <-statusC; code != 0 {
		return command.StatusError{StatusCode: code}
	}
	return nil
}

// runStartFailure reports a failed start like docker run: the hint of
// RunFailure, with 126/127 when the command cannot be executed.
func runStartFailure(cmd *cobra.Command, err error) error {
	se := command.RunFailure(cmd, err).(command.StatusError)
	se.StatusCode = startErrorStatus(err)
	return se
}

// startContainer starts id, passing the descriptors pass names with the
// request (api/fdpass), or as the stock CLI does when there are none.
func startContainer(ctx context.Context, cli *command.Cli, id string, pass fdpass.Request) error {
	if pass.Files > 0 {
		return cli.StartWithFiles(ctx, id, pass)
	}
	c, err := cli.Client()
	if err != nil {
		return err
	}
	return c.ContainerStart(ctx, id, container.StartOptions{})
}

// addPreserveFdsFlag is Podman's --preserve-fds: the container's process
// gets the CLI's descriptors 3 .. 3+N-1 (socket activation's, when the CLI
// was socket-activated, come first in any case).
func addPreserveFdsFlag(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "preserve-fds", 0, "Pass N additional file descriptors of the CLI (3 to 3+N-1) to the container's process (unix socket only)")
}
