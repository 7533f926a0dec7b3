// Package cli assembles the docker command tree and runs it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/command/container"
	"github.com/sdengine/engine/cli/command/image"
	"github.com/sdengine/engine/cli/command/network"
	"github.com/sdengine/engine/cli/command/system"
	"github.com/sdengine/engine/cli/command/volume"
	"github.com/spf13/cobra"
)

// Run executes the docker CLI with args (without the program name) and
// returns the process exit status.
func Run(args []string, in io.ReadCloser, out, errOut io.Writer) int {
	c := command.NewCli(in, out, errOut)
	defer c.Close()
	root := NewRootCommand(c)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0
	}
	var se command.StatusError
	if errors.As(err, &se) {
		if se.Status != "" {
			fmt.Fprintln(errOut, se.Status)
		}
		if se.StatusCode == 0 {
			return 1
		}
		return se.StatusCode
	}
	fmt.Fprintln(errOut, err)
	return 1
}

// NewRootCommand builds "docker" with its global flags and subcommands.
func NewRootCommand(c *command.Cli) *cobra.Command {
	var debug, showVersion bool
	var logLevel string
	root := &cobra.Command{
		Use:              "docker [OPTIONS] COMMAND [ARG...]",
		Short:            "A self-sufficient runtime for containers",
		SilenceUsage:     true,
		SilenceErrors:    true,
		TraverseChildren: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return command.StatusError{Status: fmt.Sprintf("docker: unknown command: docker %s\n\nRun 'docker --help' for more information", args[0]), StatusCode: 1}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if showVersion {
				fmt.Fprintf(c.Out(), "Docker version %s\n", system.ClientVersion)
				return nil
			}
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			level := slog.LevelWarn
			if debug {
				level = slog.LevelDebug
			} else if logLevel != "" {
				if err := level.UnmarshalText([]byte(logLevel)); err != nil {
					return command.StatusError{Status: fmt.Sprintf("unable to parse logging level: %s", logLevel), StatusCode: 1}
				}
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(c.Err(), &slog.HandlerOptions{Level: level})))
			return nil
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(command.FlagErrorFunc)
	// Global flags go before the command name, as in docker, so they are
	// root-local (TraverseChildren parses them) and free their shorthands
	// (-l, -c, -H) for the commands.
	pf := root.Flags()
	pf.StringVarP(&c.Host, "host", "H", "", "Daemon socket to connect to")
	pf.BoolVar(&c.TLS.TLS, "tls", c.TLS.TLS, "Use TLS; implied by --tlsverify")
	pf.BoolVar(&c.TLS.Verify, "tlsverify", c.TLS.Verify, "Use TLS and verify the remote")
	pf.StringVar(&c.TLS.CACert, "tlscacert", c.TLS.CACert, "Trust certs signed only by this CA")
	pf.StringVar(&c.TLS.Cert, "tlscert", c.TLS.Cert, "Path to TLS certificate file")
	pf.StringVar(&c.TLS.Key, "tlskey", c.TLS.Key, "Path to TLS key file")
	c.TLS.Given = pf.Changed
	pf.BoolVarP(&debug, "debug", "D", false, "Enable debug mode")
	pf.StringVarP(&logLevel, "log-level", "l", "", `Set the logging level ("debug"|"info"|"warn"|"error")`)
	pf.String("config", "", "Location of client config files (accepted, unused)")
	pf.StringP("context", "c", "", "Name of the context to use (accepted, unused)")
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "Print version information and quit")

	root.AddCommand(container.TopLevelCommands(c)...)
	root.AddCommand(image.TopLevelCommands(c)...)
	root.AddCommand(system.NewVersionCommand(c), system.NewInfoCommand(c), system.NewInspectCommand(c), system.NewEventsCommand(c))
	root.AddCommand(
		group("container", "Manage containers", container.Commands(c)...),
		group("image", "Manage images", image.Commands(c)...),
		group("network", "Manage networks", network.Commands(c)...),
		group("system", "Manage Docker", system.NewInfoCommand(c), system.NewEventsCommand(c), system.NewPruneCommand(c)),
		group("volume", "Manage volumes", volume.Commands(c)...),
	)
	disableFlagsInUseLine(root)
	addCompletions(c, root)
	return root
}

// disableFlagsInUseLine keeps usage lines as docker prints them, without
// cobra's trailing "[flags]".
func disableFlagsInUseLine(c *cobra.Command) {
	c.DisableFlagsInUseLine = true
	for _, sub := range c.Commands() {
		disableFlagsInUseLine(sub)
	}
}

// group is a management command ("docker container ...") that only holds
// subcommands; an unknown subcommand is reported like docker does.
func group(name, short string, cmds ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use:   name,
		Short: short,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return command.StatusError{Status: fmt.Sprintf("docker: unknown command: docker %s %s\n\nRun 'docker %s --help' for more information", name, args[0], name), StatusCode: 1}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	g.AddCommand(cmds...)
	return g
}
