package system

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
)

// NewEventsCommand is "docker events".
func NewEventsCommand(cli *command.Cli) *cobra.Command {
	var since, until, format string
	var filterFlags []string
	cmd := &cobra.Command{
		Use:   "events [OPTIONS]",
		Short: "Get real time events from the server",
		Args:  command.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			f, err := opts.ParseFilters(filterFlags)
			if err != nil {
				return err
			}
			msgs, errs := c.Events(cmd.Context(), events.ListOptions{Since: since, Until: until, Filters: f})
			for {
				select {
				case m := <-msgs:
					if err := printEvent(cli.Out(), format, m); err != nil {
						return err
					}
				case err := <-errs:
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "Show all events created since timestamp")
	cmd.Flags().StringVar(&until, "until", "", "Stream events until this timestamp")
	cmd.Flags().StringArrayVarP(&filterFlags, "filter", "f", nil, "Filter output based on conditions provided")
	cmd.Flags().StringVar(&format, "format", "", "Format output using a custom template")
	return cmd
}

// printEvent writes one event as docker does: its time, type, action,
// actor and sorted attributes, or through the user's template.
func printEvent(out io.Writer, format string, m events.Message) error {
	switch strings.TrimSpace(format) {
	case "":
	case formatter.JSONDirective:
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	default:
		return formatter.Execute(out, format, m)
	}
	t := time.Unix(0, m.TimeNano).Format("2006-01-02T15:04:05.000000000Z07:00")
	var attrs []string
	for k, v := range m.Actor.Attributes {
		attrs = append(attrs, k+"="+v)
	}
	sort.Strings(attrs)
	line := fmt.Sprintf("%s %s %s %s", t, m.Type, m.Action, m.Actor.ID)
	if len(attrs) > 0 {
		line += " (" + strings.Join(attrs, ", ") + ")"
	}
	_, err := fmt.Fprintln(out, line)
	return err
}
