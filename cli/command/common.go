package command

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	units "github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
)

// InspectFunc returns the raw inspect JSON of one object.
type InspectFunc func(ctx context.Context, c *client.Client, ref string) ([]byte, error)

// NewInspectCommand is the "inspect" subcommand every object kind has:
// one or more references, --format, the output of Inspect.
func NewInspectCommand(cli *Cli, use, short string, get InspectFunc) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return Inspect(cli.Out(), cli.Err(), args, format, func(ref string) ([]byte, error) {
				return get(cmd.Context(), c, ref)
			})
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "Format output using a custom template")
	return cmd
}

// RemoveEach runs remove for each name in turn, printing the name on
// success and the error on stderr otherwise, as Docker's "rm" commands do;
// any failure makes the command exit 1. skip says which errors are not
// failures (nil: none).
func RemoveEach(ctx context.Context, cli *Cli, names []string, remove func(context.Context, string) error, skip func(error) bool) error {
	failed := false
	for _, n := range names {
		if err := remove(ctx, n); err != nil {
			if skip != nil && skip(err) {
				continue
			}
			fmt.Fprintln(cli.Err(), err)
			failed = true
			continue
		}
		fmt.Fprintln(cli.Out(), n)
	}
	if failed {
		return StatusError{StatusCode: 1}
	}
	return nil
}

// PrintDeleted prints a prune's "Deleted <kind>:" list, followed by a
// blank line, when it is not empty.
func PrintDeleted(out io.Writer, kind string, names []string) {
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(out, "Deleted %s:\n", kind)
	for _, n := range names {
		fmt.Fprintln(out, n)
	}
	fmt.Fprintln(out)
}

// PrintDeletedImages prints an image prune's list: "untagged:" and
// "deleted:" lines, as Docker's CLI shows them.
func PrintDeletedImages(out io.Writer, items []image.DeleteResponse) {
	var lines []string
	for _, d := range items {
		if d.Untagged != "" {
			lines = append(lines, "untagged: "+d.Untagged)
		}
		if d.Deleted != "" {
			lines = append(lines, "deleted: "+d.Deleted)
		}
	}
	PrintDeleted(out, "Images", lines)
}

// PrintReclaimed prints a prune's last line.
func PrintReclaimed(out io.Writer, bytes uint64) {
	fmt.Fprintln(out, "Total reclaimed space:", units.HumanSize(float64(bytes)))
}

// PruneFunc does a prune's work, once its filters are parsed and the
// user agreed.
type PruneFunc func(ctx context.Context, c *client.Client, f filters.Args) error

// NewPruneCommand is the "prune" subcommand every object kind has:
// --filter (filterExample shows one) and --force, Docker's prompt unless
// -f, then run. warning returns the prompt's text; it may add to the
// filters (what an --all flag of the caller's means).
func NewPruneCommand(cli *Cli, short, filterExample string, warning func(f filters.Args) string, run PruneFunc) *cobra.Command {
	var force bool
	var filterFlags []string
	cmd := &cobra.Command{
		Use:   "prune [OPTIONS]",
		Short: short,
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			if w := warning(f); !force && !Confirm(cli, w) {
				return nil
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return run(cmd.Context(), c, f)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Do not prompt for confirmation")
	cmd.Flags().StringArrayVar(&filterFlags, "filter", nil, "Provide filter values (e.g. \""+filterExample+"\")")
	return cmd
}

// ListSpec is what differs between the "ls" subcommands of the object
// kinds: the rows for a filter, and how they print.
type ListSpec struct {
	Short         string
	QuietHelp     string // the -q flag's help
	FilterExample string
	// NoTrunc adds --no-trunc.
	NoTrunc bool
	// QuietFormat is the template -q stands for.
	QuietFormat string
	TableFormat string
	Headers     formatter.Headers
	// List returns the rows (formatter items) that match f.
	List func(ctx context.Context, c *client.Client, f filters.Args, noTrunc bool) ([]any, error)
}

// NewListCommand is the "ls" subcommand: --filter, --format, -q.
func NewListCommand(cli *Cli, spec ListSpec) *cobra.Command {
	var quiet, noTrunc bool
	var filterFlags []string
	var format string
	cmd := &cobra.Command{
		Use:     "ls [OPTIONS]",
		Aliases: []string{"list"},
		Short:   spec.Short,
		Args:    NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			items, err := spec.List(cmd.Context(), c, f, noTrunc)
			if err != nil {
				return err
			}
			if quiet && format == "" {
				format = spec.QuietFormat
			}
			return formatter.Write(cli.Out(), format, spec.TableFormat, spec.Headers, items)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&quiet, "quiet", "q", false, spec.QuietHelp)
	if spec.NoTrunc {
		fs.BoolVar(&noTrunc, "no-trunc", false, "Do not truncate the output")
	}
	fs.StringArrayVarP(&filterFlags, "filter", "f", nil, "Provide filter values (e.g. \""+spec.FilterExample+"\")")
	fs.StringVar(&format, "format", "", "Format output using a custom template")
	return cmd
}
