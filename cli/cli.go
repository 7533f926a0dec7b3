// Package cli assembles the docker command tree and runs it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/command/container"
	"github.com/sdengine/engine/cli/command/image"
	"github.com/sdengine/engine/cli/command/network"
	"github.com/sdengine/engine/cli/command/system"
	"github.com/sdengine/engine/cli/command/volume"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Run executes the docker CLI with args (without the program name) and
// returns the process exit status.
func Run(args []string, in io.ReadCloser, out, errOut io.Writer) int {
	c := command.NewCli(in, out, errOut)
	defer c.Close()
	return execute(newRootCommandFor(c, args), args, in, out, errOut)
}

// execute runs root with args and returns the process exit status.
func execute(root *cobra.Command, args []string, in io.ReadCloser, out, errOut io.Writer) int {
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

// topLevel are the commands directly under "docker". None keeps its
// aliases: those belong to the groups ("docker container ls", not "docker
// ls").
var topLevel = slices.Concat(container.TopLevelCommands, image.TopLevelCommands, system.TopLevelCommands)

// groups are the management commands ("docker container ...").
var groups = []struct {
	name, short string
	commands    []command.Entry
}{
	{"container", "Manage containers", container.Commands},
	{"image", "Manage images", image.Commands},
	{"network", "Manage networks", network.Commands},
	{"system", "Manage Docker", system.Commands},
	{"volume", "Manage volumes", volume.Commands},
}

// NewRootCommand builds "docker" with its global flags and every command.
func NewRootCommand(c *command.Cli) *cobra.Command {
	root := newRoot(c)
	addAllCommands(c, root)
	return finish(c, root)
}

// newRootCommandFor builds "docker" for running args: with only the
// command args name when they plainly name one, else with every command.
// Building every command and its flags is most of what the CLI does before
// its first request; help, completion, unknown commands and anything the
// pre-scan is unsure of get the whole tree, so their output is the same.
func newRootCommandFor(c *command.Cli, args []string) *cobra.Command {
	root := newRoot(c)
	if !addOnlyCommand(c, root, args) {
		addAllCommands(c, root)
	}
	return finish(c, root)
}

func addAllCommands(c *command.Cli, root *cobra.Command) {
	for _, e := range topLevel {
		root.AddCommand(newTopLevel(c, e))
	}
	for _, g := range groups {
		root.AddCommand(group(g.name, g.short, command.Build(c, g.commands)...))
	}
}

// addOnlyCommand adds the one command args run, and its group's shell,
// and says whether that is all the root needs: also when args only ask
// for the version.
func addOnlyCommand(c *command.Cli, root *cobra.Command, args []string) bool {
	rest, version, ok := skipGlobalFlags(root.Flags(), args)
	switch {
	case !ok:
		return false
	case len(rest) == 0:
		return version // else the root prints its help, which lists the commands
	}
	if e, ok := command.Lookup(topLevel, rest[0]); ok {
		root.AddCommand(newTopLevel(c, e))
		return true
	}
	for _, g := range groups {
		if g.name != rest[0] || len(rest) < 2 {
			continue
		}
		if e, ok := command.Lookup(g.commands, rest[1]); ok {
			root.AddCommand(group(g.name, g.short, e.New(c)))
			return true
		}
	}
	return false
}

// skipGlobalFlags returns args past the global flags, and whether those
// had -v/--version. It skips the flags as cobra's Traverse does and gives
// up (ok false) on anything it is unsure of: a flag it does not know
// (--help among them), "--", stacked shorthands.
func skipGlobalFlags(global *pflag.FlagSet, args []string) (rest []string, version, ok bool) {
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		arg := args[i]
		var f *pflag.Flag
		var inline bool // the flag's value is in the same word
		if long, isLong := strings.CutPrefix(arg, "--"); isLong {
			n, _, hasValue := strings.Cut(long, "=")
			if n != "" {
				f = global.Lookup(n)
			}
			inline = hasValue
		} else if len(arg) >= 2 {
			f = global.ShorthandLookup(arg[1:2])
			inline = len(arg) > 2
			if f != nil && f.NoOptDefVal != "" && inline {
				return nil, false, false // -Dv: stacked booleans
			}
		}
		if f == nil {
			return nil, false, false
		}
		if arg == "-v" || arg == "--version" {
			version = true
		}
		if f.NoOptDefVal == "" && !inline {
			i++ // the value is the next word
		}
	}
	if i > len(args) {
		return nil, false, false // a value flag without its value
	}
	return args[i:], version, true
}

// newTopLevel builds a command of topLevel.
func newTopLevel(c *command.Cli, e command.Entry) *cobra.Command {
	cmd := e.New(c)
	cmd.Aliases = nil
	return cmd
}

// finish is the last touch on a root, whichever commands it has.
func finish(c *command.Cli, root *cobra.Command) *cobra.Command {
	disableFlagsInUseLine(root)
	addCompletions(c, root)
	return root
}

// newRoot builds "docker" with its global flags and no command.
func newRoot(c *command.Cli) *cobra.Command {
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
