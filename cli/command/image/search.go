package image

import (
	"strings"

	"github.com/docker/docker/api/types/registry"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
)

// NewSearchCommand is "docker search".
func NewSearchCommand(cli *command.Cli) *cobra.Command {
	var filterFlags []string
	var limit int
	var noTrunc bool
	var format string
	cmd := &cobra.Command{
		Use:   "search [OPTIONS] TERM",
		Short: "Search a registry for images",
		Long: "Search Docker Hub, the registry a TERM of the form HOST/NAME names, or the daemon's\n" +
			"search list (--add-registry) for images whose name contains TERM.",
		Args: command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			res, err := c.ImageSearch(cmd.Context(), args[0], registry.SearchOptions{
				RegistryAuth: registryAuth(searchHost(args[0])), Filters: f, Limit: limit})
			if err != nil {
				return err
			}
			items := make([]any, len(res))
			for i, r := range res {
				items[i] = formatter.SearchResult{R: r, NoTrunc: noTrunc}
			}
			return formatter.Write(cli.Out(), format, formatter.SearchTableFormat, formatter.SearchHeaders, items)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&filterFlags, "filter", "f", nil, `Filter output based on conditions provided ("is-official=true", "stars=3")`)
	fs.IntVar(&limit, "limit", 0, "Max number of search results")
	fs.BoolVar(&noTrunc, "no-trunc", false, "Don't truncate output")
	fs.StringVar(&format, "format", "", "Pretty-print search using a Go template")
	return cmd
}

// searchHost is the registry a search term names, as the daemon splits
// it: "host/term" when the first part looks like a host, else Docker
// Hub (whose credentials the CLI then sends).
func searchHost(term string) string {
	first, _, ok := strings.Cut(term, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io"
}
