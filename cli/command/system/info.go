package system

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/api/types/system"
	units "github.com/docker/go-units"
	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/spf13/cobra"
)

// NewInfoCommand is "docker info". The raw /info reply is read so that
// fields this engine adds beyond system.Info are printed too.
func NewInfoCommand(cli *command.Cli) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "info [OPTIONS]",
		Short: "Display system-wide information",
		Args:  command.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			raw, err := command.RawRequest(cmd.Context(), c, http.MethodGet, "/info", nil, nil)
			if err != nil {
				return err
			}
			var info system.Info
			if err := json.Unmarshal(raw, &info); err != nil {
				return fmt.Errorf("decoding info: %w", err)
			}
			var all map[string]any
			if err := json.Unmarshal(raw, &all); err != nil {
				return fmt.Errorf("decoding info: %w", err)
			}
			if format != "" {
				return formatter.Execute(cli.Out(), format, all)
			}
			printInfo(cli.Out(), &info, extraFields(all))
			for _, w := range info.Warnings {
				fmt.Fprintln(cli.Err(), w)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "Format output using a custom template")
	return cmd
}

// hooksField is the /info key with the daemon's number of hooks.
const hooksField = "NumberOfDockerHooks"

// extraFields returns the reply's keys that system.Info does not know.
func extraFields(all map[string]any) map[string]any {
	known := map[string]bool{}
	t := reflect.TypeOf(system.Info{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		known[name] = true
	}
	extra := map[string]any{}
	for k, v := range all {
		if !known[k] {
			extra[k] = v
		}
	}
	return extra
}

func printInfo(w io.Writer, i *system.Info, extra map[string]any) {
	p := func(indent int, key string, v any) {
		fmt.Fprintf(w, "%s%s: %v\n", strings.Repeat(" ", indent), key, v)
	}
	fmt.Fprintf(w, "Client:\n Version:    %s\n Context:    default\n Debug Mode: false\n\nServer:\n", ClientVersion)
	p(1, "Containers", i.Containers)
	p(2, "Running", i.ContainersRunning)
	p(2, "Paused", i.ContainersPaused)
	p(2, "Stopped", i.ContainersStopped)
	p(1, "Images", i.Images)
	p(1, "Server Version", i.ServerVersion)
	p(1, "Storage Driver", i.Driver)
	for _, kv := range i.DriverStatus {
		p(2, kv[0], kv[1])
	}
	p(1, "Logging Driver", i.LoggingDriver)
	p(1, "Cgroup Driver", i.CgroupDriver)
	if i.CgroupVersion != "" {
		p(1, "Cgroup Version", i.CgroupVersion)
	}
	fmt.Fprintln(w, " Plugins:")
	p(2, "Volume", strings.Join(i.Plugins.Volume, " "))
	p(2, "Network", strings.Join(i.Plugins.Network, " "))
	p(2, "Log", strings.Join(i.Plugins.Log, " "))
	printSwarm(w, i.Swarm)
	var runtimes []string
	for name := range i.Runtimes {
		runtimes = append(runtimes, name)
	}
	sort.Strings(runtimes)
	p(1, "Runtimes", strings.Join(runtimes, " "))
	p(1, "Default Runtime", i.DefaultRuntime)
	if i.InitBinary != "" {
		p(1, "Init Binary", i.InitBinary)
	}
	p(1, "containerd version", i.ContainerdCommit.ID)
	p(1, "runc version", i.RuncCommit.ID)
	p(1, "init version", i.InitCommit.ID)
	if len(i.SecurityOptions) > 0 {
		fmt.Fprintln(w, " Security Options:")
		for _, o := range i.SecurityOptions {
			for n, part := range strings.Split(o, ",") {
				k, v, _ := strings.Cut(part, "=")
				if n == 0 && k == "name" {
					fmt.Fprintf(w, "  %s\n", v)
				} else {
					p(3, titleWord(k), v)
				}
			}
		}
	}
	p(1, "Kernel Version", i.KernelVersion)
	p(1, "Operating System", i.OperatingSystem)
	p(1, "OSType", i.OSType)
	p(1, "Architecture", i.Architecture)
	// Counted by the daemon (a client cannot see the daemon's hooks.d);
	// absent from daemons without hooks.d support.
	if n, ok := extra[hooksField]; ok {
		p(1, "Number of Docker Hooks", n)
		delete(extra, hooksField)
	}
	p(1, "CPUs", i.NCPU)
	p(1, "Total Memory", units.BytesSize(float64(i.MemTotal)))
	p(1, "Name", i.Name)
	p(1, "ID", i.ID)
	p(1, "Docker Root Dir", i.DockerRootDir)
	p(1, "Debug Mode", i.Debug)
	p(1, "Experimental", i.ExperimentalBuild)
	if len(i.Labels) > 0 {
		fmt.Fprintln(w, " Labels:")
		for _, l := range i.Labels {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	p(1, "Live Restore Enabled", i.LiveRestoreEnabled)
	// Engine-specific extras, in a stable order.
	for _, k := range sortedKeys(extra) {
		v := extra[k]
		if b, err := json.Marshal(v); err == nil && reflect.TypeOf(v) != nil && reflect.TypeOf(v).Kind() != reflect.String {
			p(1, k, string(b))
		} else {
			p(1, k, v)
		}
	}
	fmt.Fprintln(w)
}

// printSwarm prints the node's swarm state where Docker's CLI does, after
// the plugins; the node's details only for a node in a swarm (this engine's
// nodes never are: they report "inactive").
func printSwarm(w io.Writer, s swarm.Info) {
	fmt.Fprintf(w, " Swarm: %s\n", s.LocalNodeState)
	switch s.LocalNodeState {
	case swarm.LocalNodeStateInactive, swarm.LocalNodeStateLocked, "":
		return
	}
	fmt.Fprintf(w, "  NodeID: %s\n", s.NodeID)
	if s.Error != "" {
		fmt.Fprintf(w, "  Error: %s\n", s.Error)
	}
	fmt.Fprintf(w, "  Is Manager: %t\n", s.ControlAvailable)
	fmt.Fprintf(w, "  Node Address: %s\n", s.NodeAddr)
}

func titleWord(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
