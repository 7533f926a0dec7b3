package container

import (
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/pkg/delayflush"
	"github.com/spf13/cobra"
)

// NewLogsCommand is "docker logs".
func NewLogsCommand(cli *command.Cli) *cobra.Command {
	var o container.LogsOptions
	cmd := &cobra.Command{
		Use:   "logs [OPTIONS] CONTAINER",
		Short: "Fetch the logs of a container",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			// A tty container's log is one raw stream; others are multiplexed.
			info, err := c.ContainerInspect(ctx, args[0])
			if err != nil {
				return err
			}
			o.ShowStdout, o.ShowStderr = true, true
			rc, err := c.ContainerLogs(ctx, info.ID, o)
			if err != nil {
				return err
			}
			defer rc.Close()
			// Many small frames: write them out in batches, soon enough
			// for -f to look live.
			out := delayflush.New(cli.Out(), 64*1024, 20*time.Millisecond, nil)
			errOut := delayflush.New(cli.Err(), 16*1024, 20*time.Millisecond, nil)
			defer errOut.Close()
			defer out.Close()
			if info.Config.Tty {
				_, err = io.Copy(out, rc)
			} else {
				_, err = stdcopy.StdCopy(out, errOut, rc)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.Follow, "follow", "f", false, "Follow log output")
	fs.StringVarP(&o.Tail, "tail", "n", "all", "Number of lines to show from the end of the logs")
	fs.BoolVarP(&o.Timestamps, "timestamps", "t", false, "Show timestamps")
	fs.StringVar(&o.Since, "since", "", "Show logs since timestamp (e.g. \"2013-01-02T13:23:37Z\") or relative (e.g. \"42m\" for 42 minutes)")
	fs.StringVar(&o.Until, "until", "", "Show logs before a timestamp (e.g. \"2013-01-02T13:23:37Z\") or relative (e.g. \"42m\" for 42 minutes)")
	fs.BoolVar(&o.Details, "details", false, "Show extra details provided to logs")
	return cmd
}
