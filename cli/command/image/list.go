// Package image implements the docker image commands (images, import, load,
// save, tag, rmi, image inspect) on top of the Engine API client.
package image

import (
	"github.com/docker/docker/api/types/image"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
	"github.com/spf13/cobra"
)

// NewImagesCommand is "docker images" (also "docker image ls").
func NewImagesCommand(cli *command.Cli) *cobra.Command {
	var all, quiet, noTrunc, digests bool
	var filterFlags []string
	var format string
	cmd := &cobra.Command{
		Use:     "images [OPTIONS] [REPOSITORY[:TAG]]",
		Aliases: []string{"ls", "list"},
		Short:   "List images",
		Args:    command.RequiresMaxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				f.Add("reference", args[0])
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			list, err := c.ImageList(cmd.Context(), image.ListOptions{All: all, Filters: f})
			if err != nil {
				return err
			}
			if quiet && format == "" {
				format = formatter.ImageQuietFormat
			}
			def := formatter.ImageTableFormat
			if digests {
				def = formatter.ImageTableDigestFormat
			}
			var items []any
			for _, img := range list {
				for _, row := range formatter.ImageRows(img, !noTrunc) {
					items = append(items, row)
				}
			}
			return formatter.Write(cli.Out(), format, def, formatter.ImageHeaders, items)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&all, "all", "a", false, "Show all images (default hides intermediate images)")
	fs.BoolVarP(&quiet, "quiet", "q", false, "Only show image IDs")
	fs.BoolVar(&noTrunc, "no-trunc", false, "Don't truncate output")
	fs.BoolVar(&digests, "digests", false, "Show digests")
	fs.StringArrayVarP(&filterFlags, "filter", "f", nil, "Filter output based on conditions provided")
	fs.StringVar(&format, "format", "", "Format output using a custom template")
	return cmd
}
