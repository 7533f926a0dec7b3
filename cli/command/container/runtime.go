package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/cli/formatter"
	"github.com/sdengine/engine/runconfig/opts"
)

func newPauseCommand(cli *command.Cli) *cobra.Command {
	return newEachCommand(cli, "pause", "Pause all processes within one or more containers", func(ctx context.Context, c *client.Client, n string) error { return c.ContainerPause(ctx, n) })
}

func newUnpauseCommand(cli *command.Cli) *cobra.Command {
	return newEachCommand(cli, "unpause", "Unpause all processes within one or more containers", func(ctx context.Context, c *client.Client, n string) error { return c.ContainerUnpause(ctx, n) })
}

// NewPruneCommand is "docker container prune".
func NewPruneCommand(cli *command.Cli) *cobra.Command {
	return command.NewPruneCommand(cli, "Remove all stopped containers", "until=<timestamp>",
		func(filters.Args) string { return "WARNING! This will remove all stopped containers." },
		func(ctx context.Context, c *client.Client, f filters.Args) error {
			rep, err := c.ContainersPrune(ctx, f)
			if err != nil {
				return err
			}
			command.PrintDeleted(cli.Out(), "Containers", rep.ContainersDeleted)
			command.PrintReclaimed(cli.Out(), rep.SpaceReclaimed)
			return nil
		})
}

func newEachCommand(cli *command.Cli, verb, short string, do func(ctx context.Context, c *client.Client, n string) error) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " CONTAINER [CONTAINER...]",
		Short: short,
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			return forEach(cli, args, func(ctx context.Context, n string) error { return do(ctx, c, n) }, cmd.Context())
		},
	}
}

func newRenameCommand(cli *command.Cli) *cobra.Command {
	return &cobra.Command{
		Use:   "rename CONTAINER NEW_NAME",
		Short: "Rename a container",
		Args:  command.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			if strings.TrimSpace(args[1]) == "" {
				return errors.New("Error: Neither old nor new names may be empty")
			}
			return c.ContainerRename(cmd.Context(), args[0], args[1])
		},
	}
}

func newUpdateCommand(cli *command.Cli) *cobra.Command {
	var memory, swap, reservation, cpus, restart string
	var shares, quota, period int64
	var cpusetCpus, cpusetMems string
	var pids int64
	var blkio uint16
	cmd := &cobra.Command{
		Use:   "update [OPTIONS] CONTAINER [CONTAINER...]",
		Short: "Update configuration of one or more containers",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			var u container.UpdateConfig
			fl := cmd.Flags()
			if fl.Changed("memory") {
				if u.Memory, err = opts.ParseMemory(memory); err != nil {
					return err
				}
			}
			if fl.Changed("memory-swap") {
				if u.MemorySwap, err = opts.ParseMemorySwap(swap); err != nil {
					return err
				}
			}
			if fl.Changed("memory-reservation") {
				if u.MemoryReservation, err = opts.ParseMemory(reservation); err != nil {
					return err
				}
			}
			if fl.Changed("cpus") {
				if u.NanoCPUs, err = opts.ParseCPUs(cpus); err != nil {
					return err
				}
			}
			u.CPUShares, u.CPUQuota, u.CPUPeriod = shares, quota, period
			u.CpusetCpus, u.CpusetMems, u.BlkioWeight = cpusetCpus, cpusetMems, blkio
			if fl.Changed("pids-limit") {
				u.PidsLimit = &pids
			}
			if fl.Changed("restart") {
				if u.RestartPolicy, err = opts.ParseRestartPolicy(restart); err != nil {
					return err
				}
			}
			return forEach(cli, args, func(ctx context.Context, n string) error {
				resp, err := c.ContainerUpdate(ctx, n, u)
				for _, w := range resp.Warnings {
					fmt.Fprintln(cli.Err(), w)
				}
				return err
			}, cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&memory, "memory", "m", "", "Memory limit")
	f.StringVar(&swap, "memory-swap", "", "Swap limit equal to memory plus swap: -1 to enable unlimited swap")
	f.StringVar(&reservation, "memory-reservation", "", "Memory soft limit")
	f.StringVar(&cpus, "cpus", "", "Number of CPUs")
	f.Int64VarP(&shares, "cpu-shares", "c", 0, "CPU shares (relative weight)")
	f.Int64Var(&quota, "cpu-quota", 0, "Limit CPU CFS (Completely Fair Scheduler) quota")
	f.Int64Var(&period, "cpu-period", 0, "Limit CPU CFS (Completely Fair Scheduler) period")
	f.StringVar(&cpusetCpus, "cpuset-cpus", "", "CPUs in which to allow execution (0-3, 0,1)")
	f.StringVar(&cpusetMems, "cpuset-mems", "", "MEMs in which to allow execution (0-3, 0,1)")
	f.Int64Var(&pids, "pids-limit", 0, "Tune container pids limit (set -1 for unlimited)")
	f.Uint16Var(&blkio, "blkio-weight", 0, "Block IO (relative weight), between 10 and 1000, or 0 to disable")
	f.StringVar(&restart, "restart", "", "Restart policy to apply when a container exits")
	return cmd
}

func newTopCommand(cli *command.Cli) *cobra.Command {
	return &cobra.Command{
		Use:   "top CONTAINER [ps OPTIONS]",
		Short: "Display the running processes of a container",
		Args:  command.RequiresMinArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			top, err := c.ContainerTop(cmd.Context(), args[0], args[1:])
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cli.Out(), 20, 1, 3, ' ', 0)
			fmt.Fprintln(w, strings.Join(top.Titles, "\t"))
			for _, p := range top.Processes {
				fmt.Fprintln(w, strings.Join(p, "\t"))
			}
			return w.Flush()
		},
	}
}

func newDiffCommand(cli *command.Cli) *cobra.Command {
	return &cobra.Command{
		Use:   "diff CONTAINER",
		Short: "Inspect changes to files or directories on a container's filesystem",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			changes, err := c.ContainerDiff(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			for _, ch := range changes {
				fmt.Fprintf(cli.Out(), "%s %s\n", ch.Kind.String(), ch.Path)
			}
			return nil
		},
	}
}

// statsRow is one line of docker stats, with docker's column names.
type statsRow struct {
	Container, ID, Name, CPUPerc, MemUsage, MemPerc, NetIO, BlockIO, PIDs string
}

const statsTable = "table {{.ID}}\t{{.Name}}\t{{.CPUPerc}}\t{{.MemUsage}}\t{{.MemPerc}}\t{{.NetIO}}\t{{.BlockIO}}\t{{.PIDs}}"

var statsHeaders = formatter.Headers{
	"Container": "CONTAINER", "ID": "CONTAINER ID", "Name": "NAME", "CPUPerc": "CPU %", "MemUsage": "MEM USAGE / LIMIT",
	"MemPerc": "MEM %", "NetIO": "NET I/O", "BlockIO": "BLOCK I/O", "PIDs": "PIDS",
}

// toRow computes docker's figures: CPU against the host's time since the
// previous sample, memory less the page cache.
func toRow(name string, s *container.StatsResponse) statsRow {
	r := statsRow{Container: name, ID: s.ID, Name: strings.TrimPrefix(s.Name, "/")}
	if len(r.ID) > 12 {
		r.ID = r.ID[:12]
	}
	cpu := 0.0
	cpuDelta := float64(s.CPUStats.CPUUsage.TotalUsage) - float64(s.PreCPUStats.CPUUsage.TotalUsage)
	sysDelta := float64(s.CPUStats.SystemUsage) - float64(s.PreCPUStats.SystemUsage)
	if sysDelta > 0 && cpuDelta > 0 {
		cpu = cpuDelta / sysDelta * float64(max(s.CPUStats.OnlineCPUs, 1)) * 100
	}
	mem := float64(s.MemoryStats.Usage)
	if v, ok := s.MemoryStats.Stats["total_inactive_file"]; ok && float64(v) < mem {
		mem -= float64(v)
	} else if v, ok := s.MemoryStats.Stats["inactive_file"]; ok && float64(v) < mem {
		mem -= float64(v)
	}
	memPerc := 0.0
	if s.MemoryStats.Limit > 0 {
		memPerc = mem / float64(s.MemoryStats.Limit) * 100
	}
	var rx, tx float64
	for _, n := range s.Networks {
		rx += float64(n.RxBytes)
		tx += float64(n.TxBytes)
	}
	var rd, wr float64
	for _, e := range s.BlkioStats.IoServiceBytesRecursive {
		switch strings.ToLower(e.Op) {
		case "read":
			rd += float64(e.Value)
		case "write":
			wr += float64(e.Value)
		}
	}
	r.CPUPerc = fmt.Sprintf("%.2f%%", cpu)
	r.MemUsage = units.BytesSize(mem) + " / " + units.BytesSize(float64(s.MemoryStats.Limit))
	r.MemPerc = fmt.Sprintf("%.2f%%", memPerc)
	r.NetIO = units.HumanSizeWithPrecision(rx, 3) + " / " + units.HumanSizeWithPrecision(tx, 3)
	r.BlockIO = units.HumanSizeWithPrecision(rd, 3) + " / " + units.HumanSizeWithPrecision(wr, 3)
	r.PIDs = fmt.Sprint(s.PidsStats.Current)
	return r
}

// statsRows reads every named container's statistics concurrently (at
// most maxParallel at a time, as Docker's CLI): a non-streamed read waits
// for a second sample a second after the first (CPU % needs both), so one
// after another, 50 containers would take 50 s. The rows keep the order of
// names; the first error (in that order) fails the command, as before.
func statsRows(ctx context.Context, names []string, get func(ctx context.Context, name string) (*container.StatsResponse, error)) ([]any, error) {
	var mu sync.Mutex
	got := make(map[string]*container.StatsResponse, len(names))
	errs := runOrdered(ctx, names, maxParallel, func(ctx context.Context, n string) (string, error) {
		s, err := get(ctx, n)
		if err != nil {
			return "", err
		}
		mu.Lock()
		got[n] = s
		mu.Unlock()
		return n, nil
	}, func(string) {})
	if len(errs) > 0 {
		return nil, errs[0]
	}
	rows := make([]any, 0, len(names))
	for _, n := range names {
		rows = append(rows, toRow(n, got[n]))
	}
	return rows, nil
}

func newStatsCommand(cli *command.Cli) *cobra.Command {
	var all, noStream, noTrunc bool
	var format string
	cmd := &cobra.Command{
		Use:   "stats [OPTIONS] [CONTAINER...]",
		Short: "Display a live stream of container(s) resource usage statistics",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			names := args
			if len(names) == 0 {
				list, err := c.ContainerList(ctx, container.ListOptions{All: all})
				if err != nil {
					return err
				}
				for _, s := range list {
					names = append(names, s.ID)
				}
			}
			if !noStream {
				return errors.New("docker stats: only --no-stream is supported by this CLI; use the stock docker CLI for a live view")
			}
			rows, err := statsRows(ctx, names, func(ctx context.Context, n string) (*container.StatsResponse, error) {
				resp, err := c.ContainerStats(ctx, n, false)
				if err != nil {
					return nil, err
				}
				defer resp.Body.Close()
				var s container.StatsResponse
				if err := json.NewDecoder(resp.Body).Decode(&s); err != nil && err != io.EOF {
					return nil, err
				}
				return &s, nil
			})
			if err != nil {
				return err
			}
			_ = noTrunc
			return formatter.Write(cli.Out(), format, statsTable, statsHeaders, rows)
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "Show all containers (default shows just running)")
	cmd.Flags().BoolVar(&noStream, "no-stream", false, "Disable streaming stats and only pull the first result")
	cmd.Flags().BoolVar(&noTrunc, "no-trunc", false, "Do not truncate output")
	cmd.Flags().StringVar(&format, "format", "", "Format output using a custom template")
	return cmd
}
