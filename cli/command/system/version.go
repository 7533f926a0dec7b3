// Package system implements "docker version", "docker info" and the
// top-level "docker inspect".
package system

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/docker/docker/api"
	"github.com/docker/docker/api/types"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/spf13/cobra"
)

// ClientVersion is this CLI's version as reported by "docker version".
// The CLI follows the Engine API of the client library it is built on.
var ClientVersion = "28.5.2-sdengine"

// clientInfo is the Client half of "docker version" (and its template data).
type clientInfo struct {
	Version    string
	APIVersion string `json:"ApiVersion"`
	GoVersion  string
	Os         string
	Arch       string
	Context    string
}

type versionInfo struct {
	Client clientInfo
	Server *types.Version
}

// NewVersionCommand is "docker version".
func NewVersionCommand(cli *command.Cli) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version [OPTIONS]",
		Short: "Show the Docker version information",
		Args:  command.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionInfo{Client: clientInfo{
				Version: ClientVersion, APIVersion: api.DefaultVersion, GoVersion: runtime.Version(),
				Os: runtime.GOOS, Arch: runtime.GOARCH, Context: "default",
			}}
			c, err := cli.Client()
			var serverErr error
			if err == nil {
				var sv types.Version
				if sv, serverErr = c.ServerVersion(cmd.Context()); serverErr == nil {
					v.Server = &sv
					v.Client.APIVersion = c.ClientVersion()
				}
			} else {
				serverErr = err
			}
			if format != "" {
				if err := formatter.Execute(cli.Out(), format, v); err != nil {
					return err
				}
			} else {
				printVersion(cli.Out(), v)
			}
			return serverErr
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "Format output using a custom template")
	return cmd
}

func printVersion(w io.Writer, v versionInfo) {
	fmt.Fprintf(w, "Client:\n")
	fmt.Fprintf(w, " Version:           %s\n", v.Client.Version)
	fmt.Fprintf(w, " API version:       %s\n", v.Client.APIVersion)
	fmt.Fprintf(w, " Go version:        %s\n", v.Client.GoVersion)
	fmt.Fprintf(w, " OS/Arch:           %s/%s\n", v.Client.Os, v.Client.Arch)
	fmt.Fprintf(w, " Context:           %s\n", v.Client.Context)
	s := v.Server
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nServer:")
	if s.Platform.Name != "" {
		fmt.Fprintf(w, " %s", s.Platform.Name)
	}
	fmt.Fprintln(w)
	printed := false
	for _, comp := range s.Components {
		fmt.Fprintf(w, " %s:\n", comp.Name)
		fmt.Fprintf(w, "  Version:          %s\n", comp.Version)
		if comp.Name == "Engine" {
			printed = true
			api := s.APIVersion
			if s.MinAPIVersion != "" {
				api += " (minimum version " + s.MinAPIVersion + ")"
			}
			fmt.Fprintf(w, "  API version:      %s\n", api)
			fmt.Fprintf(w, "  Go version:       %s\n", s.GoVersion)
			fmt.Fprintf(w, "  Git commit:       %s\n", s.GitCommit)
			fmt.Fprintf(w, "  Built:            %s\n", s.BuildTime)
			fmt.Fprintf(w, "  OS/Arch:          %s/%s\n", s.Os, s.Arch)
			fmt.Fprintf(w, "  Experimental:     %t\n", s.Experimental)
			continue
		}
		for _, k := range sortedKeys(comp.Details) {
			fmt.Fprintf(w, "  %s:%s%s\n", k, strings.Repeat(" ", max(1, 17-len(k))), comp.Details[k])
		}
	}
	if !printed {
		// Daemons without Components still report the engine fields.
		fmt.Fprintf(w, " Engine:\n  Version:          %s\n  API version:      %s\n  OS/Arch:          %s/%s\n",
			s.Version, s.APIVersion, s.Os, s.Arch)
	}
}
