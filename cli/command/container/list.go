package container

import (
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
	"github.com/spf13/cobra"
)

// NewPsCommand is "docker ps" (also "docker container ls/list/ps").
func NewPsCommand(cli *command.Cli) *cobra.Command {
	var all, quiet, latest, noTrunc, size bool
	var last int
	var filterFlags []string
	var format string
	cmd := &cobra.Command{
		Use:     "ps [OPTIONS]",
		Aliases: []string{"ls", "list"},
		Short:   "List containers",
		Args:    command.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			if latest && last == -1 {
				last = 1
			}
			list, err := c.ContainerList(cmd.Context(), container.ListOptions{
				All: all, Limit: last, Size: size || format != "" && formatUses(format, ".Size"), Filters: f,
			})
			if err != nil {
				return err
			}
			if quiet && format == "" {
				format = formatter.ContainerQuietFormat
			}
			def := formatter.ContainerTableFormat
			if size {
				def += "\t{{.Size}}"
			}
			items := make([]any, 0, len(list))
			for _, s := range list {
				items = append(items, formatter.Container{C: s, Trunc: !noTrunc})
			}
			return formatter.Write(cli.Out(), format, def, formatter.ContainerHeaders, items)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&all, "all", "a", false, "Show all containers (default shows just running)")
	fs.BoolVarP(&quiet, "quiet", "q", false, "Only display container IDs")
	fs.BoolVarP(&latest, "latest", "l", false, "Show the latest created container (includes all states)")
	fs.IntVarP(&last, "last", "n", -1, "Show n last created containers (includes all states)")
	fs.BoolVar(&noTrunc, "no-trunc", false, "Don't truncate output")
	fs.BoolVarP(&size, "size", "s", false, "Display total file sizes")
	fs.StringArrayVarP(&filterFlags, "filter", "f", nil, "Filter output based on conditions provided")
	fs.StringVar(&format, "format", "", "Format output using a custom template")
	return cmd
}

// formatUses tells whether a template needs a field that costs the daemon
// extra work (sizes are only computed on request).
func formatUses(format, field string) bool { return strings.Contains(format, field) }
