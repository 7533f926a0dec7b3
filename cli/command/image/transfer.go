package image

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/sdengine/engine/cli/command"
	"github.com/spf13/cobra"
)

// NewImportCommand is "docker import" (also "docker image import").
func NewImportCommand(cli *command.Cli) *cobra.Command {
	var o image.ImportOptions
	cmd := &cobra.Command{
		Use:   "import [OPTIONS] file|URL|- [REPOSITORY[:TAG]]",
		Short: "Import the contents from a tarball to create a filesystem image",
		Args:  command.RequiresRangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := image.ImportSource{SourceName: "-"}
			switch from := args[0]; {
			case from == "-":
				src.Source = cli.In()
			case strings.HasPrefix(from, "http://"), strings.HasPrefix(from, "https://"):
				// The daemon downloads URLs itself.
				src.SourceName = from
			default:
				f, err := os.Open(from)
				if err != nil {
					return err
				}
				defer f.Close()
				src.Source = f
			}
			ref := ""
			if len(args) == 2 {
				ref = args[1]
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			rc, err := c.ImageImport(cmd.Context(), src, ref, o)
			if err != nil {
				return err
			}
			defer rc.Close()
			return displayStream(cli, rc)
		},
	}
	cmd.Flags().StringArrayVarP(&o.Changes, "change", "c", nil, "Apply Dockerfile instruction to the created image")
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "Set commit message for imported image")
	cmd.Flags().StringVar(&o.Platform, "platform", "", "Set platform if server is multi-platform capable")
	return cmd
}

// displayStream renders a JSON progress stream, returning the first error
// message it carries.
func displayStream(cli *command.Cli, r io.Reader) error {
	err := jsonmessage.DisplayJSONMessagesStream(r, cli.Out(), cli.Out().FD(), cli.Out().IsTerminal(), nil)
	var jerr *jsonmessage.JSONError
	if errors.As(err, &jerr) {
		// The daemon failed mid-stream: print its message as docker does.
		return command.StatusError{Status: jerr.Message, StatusCode: 1}
	}
	return err
}

// NewLoadCommand is "docker load".
func NewLoadCommand(cli *command.Cli) *cobra.Command {
	var input string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "load [OPTIONS]",
		Short: "Load an image from a tar archive or STDIN",
		Args:  command.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = cli.In()
			if input != "" {
				f, err := os.Open(input)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			} else if cli.In().IsTerminal() {
				return errors.New("requested load from stdin, but stdin is empty")
			}
			if !cli.Out().IsTerminal() {
				// Progress bars only make sense on a terminal.
				quiet = true
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			resp, err := c.ImageLoad(cmd.Context(), in, client.ImageLoadWithQuiet(quiet))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.Body != nil && resp.JSON {
				return displayStream(cli, resp.Body)
			}
			_, err = io.Copy(cli.Out(), resp.Body)
			return err
		},
	}
	cmd.Flags().StringVarP(&input, "input", "i", "", "Read from tar archive file, instead of STDIN")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "Suppress the load output")
	return cmd
}

// NewSaveCommand is "docker save".
func NewSaveCommand(cli *command.Cli) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "save [OPTIONS] IMAGE [IMAGE...]",
		Short: "Save one or more images to a tar archive (streamed to STDOUT by default)",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := command.CheckArchiveOutput(cli, output); err != nil {
				return err
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			rc, err := c.ImageSave(cmd.Context(), args)
			if err != nil {
				return err
			}
			defer rc.Close()
			return command.WriteArchive(cli, output, rc)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Write to a file, instead of STDOUT")
	return cmd
}
