package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/pkg/errdefs"
)

// runningTask returns c's task if c runs (paused or not); the caller
// holds c's lock.
func (d *Daemon) runningTask(c *container.Container) (execdriver.Task, error) {
	task := d.task(c.ID)
	if !c.State.Running() || task == nil {
		return nil, errdefs.Conflict(fmt.Errorf("Container %s is not running", c.ID))
	}
	return task, nil
}

// ContainerPause freezes the container (the cgroup freezer, through its
// shim).
func (d *Daemon) ContainerPause(ctx context.Context, name string) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	c.Lock()
	defer c.Unlock()
	if c.State.Status == container.StatusPaused {
		return errdefs.Conflict(fmt.Errorf("Container %s is already paused", c.ID))
	}
	task, err := d.runningTask(c)
	if err != nil {
		return err
	}
	if err := task.Pause(); err != nil {
		return fmt.Errorf("cannot pause container %s: %w", c.ID, err)
	}
	c.State.Status = container.StatusPaused
	if err := c.SaveLocked(); err != nil {
		slog.Error("save paused container", "id", c.ID, "err", err)
	}
	d.containerEvent(c, eventtypes.ActionPause, nil)
	return nil
}

// ContainerUnpause thaws a paused container.
func (d *Daemon) ContainerUnpause(ctx context.Context, name string) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	c.Lock()
	defer c.Unlock()
	if c.State.Status != container.StatusPaused {
		return errdefs.Conflict(fmt.Errorf("Container %s is not paused", c.ID))
	}
	task, err := d.runningTask(c)
	if err != nil {
		return err
	}
	if err := task.Resume(); err != nil {
		return fmt.Errorf("cannot unpause container %s: %w", c.ID, err)
	}
	c.State.Status = container.StatusRunning
	if err := c.SaveLocked(); err != nil {
		slog.Error("save unpaused container", "id", c.ID, "err", err)
	}
	d.containerEvent(c, eventtypes.ActionUnPause, nil)
	return nil
}

// thawIfPaused lets a signal just sent to a paused container act: a
// frozen process cannot die (Docker unpauses after a stop or kill too).
func (d *Daemon) thawIfPaused(c *container.Container, task execdriver.Task) {
	c.Lock()
	paused := c.State.Status == container.StatusPaused
	if paused {
		c.State.Status = container.StatusRunning
	}
	c.Unlock()
	if paused {
		if err := task.Resume(); err != nil {
			slog.Debug("thaw after signal", "id", c.ID, "err", err)
		}
	}
}

// ContainerRename gives the container a new name.
func (d *Daemon) ContainerRename(ctx context.Context, oldName, newName string) error {
	if newName == "" {
		return errdefs.InvalidParameter(fmt.Errorf("Neither old nor new names may be empty"))
	}
	c, err := d.containers.Get(oldName)
	if err != nil {
		return err
	}
	n, err := container.ValidateName(newName)
	if err != nil {
		return err
	}
	c.Lock()
	defer c.Unlock()
	old := c.Name
	if old == n {
		return errdefs.InvalidParameter(fmt.Errorf("Renaming a container with the same name as its current name"))
	}
	if err := d.containers.Rename(c, n); err != nil {
		return err
	}
	if err := c.SaveLocked(); err != nil {
		_ = d.containers.Rename(c, old)
		return err
	}
	d.net.Rename(c.ID, n)
	d.containerEvent(c, eventtypes.ActionRename, map[string]string{"oldName": old})
	return nil
}

// ContainerUpdate changes the restart policy and the limits: in the record,
// and on the limits cgroup (and the container's view of it) if it runs.
func (d *Daemon) ContainerUpdate(ctx context.Context, name string, cfg *containertypes.UpdateConfig) (containertypes.UpdateResponse, error) {
	var resp containertypes.UpdateResponse
	c, err := d.containers.Get(name)
	if err != nil {
		return resp, err
	}
	c.Lock()
	defer c.Unlock()
	if c.State.Status == container.StatusRemoving || c.State.Status == container.StatusDead || c.RemovalInProgress() {
		return resp, errdefs.Conflict(fmt.Errorf("Cannot update container %s: container is marked for removal and cannot be \"updated\"", c.ID))
	}
	hc := c.HostConfig
	if cfg.RestartPolicy.Name != "" {
		if hc.AutoRemove && !cfg.RestartPolicy.IsNone() {
			return resp, errdefs.Conflict(fmt.Errorf("Restart policy cannot be updated because AutoRemove is enabled for the container"))
		}
		if err := containertypes.ValidateRestartPolicy(cfg.RestartPolicy); err != nil {
			return resp, errdefs.InvalidParameter(err)
		}
	}
	r := cfg.Resources
	next := hc.Resources
	var u execdriver.Update
	if r.Memory != 0 {
		if r.Memory > 0 && r.Memory < 6*1024*1024 {
			return resp, errdefs.InvalidParameter(fmt.Errorf("Minimum memory limit allowed is 6MB"))
		}
		if next.MemorySwap > 0 && r.Memory > next.MemorySwap && r.MemorySwap == 0 {
			return resp, errdefs.InvalidParameter(fmt.Errorf("Memory limit should be smaller than already set memoryswap limit, update the memoryswap at the same time"))
		}
		next.Memory = r.Memory
		u.Memory = &next.Memory
	}
	if r.MemorySwap != 0 {
		next.MemorySwap = r.MemorySwap
		u.MemorySwap = &next.MemorySwap
	} else if r.Memory > 0 && hc.MemorySwap == 0 {
		// Docker's rule, as at create: swap as large as memory.
		swap := 2 * r.Memory
		u.MemorySwap = &swap
	}
	if next.Memory > 0 && next.MemorySwap > 0 && next.MemorySwap < next.Memory {
		return resp, errdefs.InvalidParameter(fmt.Errorf("Minimum memoryswap limit should be larger than memory limit, see usage"))
	}
	if r.MemoryReservation != 0 {
		next.MemoryReservation = r.MemoryReservation
		u.MemoryReservation = &next.MemoryReservation
	}
	if r.NanoCPUs != 0 {
		if r.NanoCPUs < 0 || r.NanoCPUs > int64(runtimeNumCPU())*1e9 {
			return resp, errdefs.InvalidParameter(fmt.Errorf("range of CPUs is from 0.01 to %d.00, as there are only %d CPUs available", runtimeNumCPU(), runtimeNumCPU()))
		}
		if r.CPUQuota != 0 || hc.CPUQuota > 0 {
			return resp, errdefs.InvalidParameter(fmt.Errorf("Conflicting options: CPU Quota cannot be updated as NanoCPUs has already been set"))
		}
		next.NanoCPUs = r.NanoCPUs
		period, quota := uint64(100000), r.NanoCPUs*100000/1e9
		u.CPUPeriod, u.CPUQuota = &period, &quota
	}
	if r.CPUQuota != 0 {
		if hc.NanoCPUs > 0 {
			return resp, errdefs.InvalidParameter(fmt.Errorf("Conflicting options: CPU Quota cannot be updated as NanoCPUs has already been set"))
		}
		next.CPUQuota = r.CPUQuota
		u.CPUQuota = &next.CPUQuota
	}
	if r.CPUPeriod != 0 {
		next.CPUPeriod = r.CPUPeriod
		p := uint64(r.CPUPeriod)
		u.CPUPeriod = &p
	}
	if r.CPUShares != 0 {
		next.CPUShares = r.CPUShares
		s := uint64(r.CPUShares)
		u.CPUShares = &s
	}
	if r.CpusetCpus != "" {
		next.CpusetCpus = r.CpusetCpus
		u.CpusetCpus = &next.CpusetCpus
	}
	if r.CpusetMems != "" {
		next.CpusetMems = r.CpusetMems
		u.CpusetMems = &next.CpusetMems
	}
	if r.BlkioWeight != 0 {
		if r.BlkioWeight < 10 || r.BlkioWeight > 1000 {
			return resp, errdefs.InvalidParameter(fmt.Errorf("Range of blkio weight is from 10 to 1000"))
		}
		next.BlkioWeight = r.BlkioWeight
		u.BlkioWeight = &next.BlkioWeight
	}
	if r.PidsLimit != nil {
		// Zero and below mean no limit, recorded as 0 (Docker's rule).
		v := max(*r.PidsLimit, 0)
		next.PidsLimit = &v
		cg := v
		if cg == 0 {
			cg = -1
		}
		u.PidsLimit = &cg
	}
	if task := d.task(c.ID); c.State.Running() && task != nil && u != (execdriver.Update{}) {
		if err := task.Update(u); err != nil {
			return resp, fmt.Errorf("Cannot update container %s: %w", c.ID, err)
		}
	}
	hc.Resources = next
	if cfg.RestartPolicy.Name != "" {
		hc.RestartPolicy = cfg.RestartPolicy
		c.RestartManager().SetPolicy(cfg.RestartPolicy)
	}
	if err := c.SaveLocked(); err != nil {
		return resp, err
	}
	d.containerEvent(c, eventtypes.ActionUpdate, nil)
	resp.Warnings = []string{}
	return resp, nil
}

// containerPids lists the host pids of the container's processes: those
// whose cgroup path names the container (its limits and payload cgroups
// both carry its ID, with either cgroup driver).
func containerPids(id string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		if bytes.Contains(data, []byte(id)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// ContainerTop runs ps on the host, as Docker does, and keeps the rows of
// the container's processes.
func (d *Daemon) ContainerTop(ctx context.Context, name, psArgs string) (*containertypes.TopResponse, error) {
	c, err := d.containers.Get(name)
	if err != nil {
		return nil, err
	}
	c.Lock()
	_, err = d.runningTask(c)
	c.Unlock()
	if err != nil {
		return nil, err
	}
	if psArgs == "" {
		psArgs = "-ef"
	}
	pids, err := containerPids(c.ID)
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, "ps", strings.Fields(psArgs)...).Output()
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("Error running ps: %w", err))
	}
	return parsePS(out, pids)
}

// parsePS keeps the lines of ps output whose PID column is one of pids;
// the last column (the command) keeps its spaces.
func parsePS(out []byte, pids []int) (*containertypes.TopResponse, error) {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 0 {
		return nil, fmt.Errorf("ps printed nothing")
	}
	titles := strings.Fields(lines[0])
	col := slices.Index(titles, "PID")
	if col < 0 {
		return nil, errdefs.InvalidParameter(fmt.Errorf("Couldn't find PID field in ps output"))
	}
	resp := &containertypes.TopResponse{Titles: titles, Processes: [][]string{}}
	for _, line := range lines[1:] {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) <= col {
			continue
		}
		pid, err := strconv.Atoi(f[col])
		if err != nil {
			return nil, fmt.Errorf("unexpected pid %q in ps output: %w", f[col], err)
		}
		if !slices.Contains(pids, pid) {
			continue
		}
		if len(f) > len(titles) {
			f = append(f[:len(titles)-1], strings.Join(f[len(titles)-1:], " "))
		}
		resp.Processes = append(resp.Processes, f)
	}
	return resp, nil
}

// ContainerStats writes Docker's stats objects: one a second while
// streaming; otherwise one, with precpu_stats from a first sample a
// second earlier (none with oneShot).
func (d *Daemon) ContainerStats(ctx context.Context, name string, stream, oneShot bool, w io.Writer) error {
	c, err := d.containers.Get(name)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(interface{ Flush() }); ok {
			f.Flush()
		}
	}
	var prev *containertypes.StatsResponse
	for {
		s := d.sample(c)
		if prev != nil {
			s.PreRead, s.PreCPUStats = prev.Read, prev.CPUStats
		}
		if stream || oneShot || prev != nil || !s.Running {
			if err := enc.Encode(s.StatsResponse); err != nil {
				return nil
			}
			flush()
			if !stream || !s.Running {
				return nil
			}
		}
		p := s.StatsResponse
		prev = &p
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil
		}
	}
}

type sample struct {
	containertypes.StatsResponse
	Running bool
}

// sample reads the container's statistics now; a stopped container's are
// zero, as Docker's.
func (d *Daemon) sample(c *container.Container) sample {
	c.Lock()
	task := d.task(c.ID)
	running := c.State.Running() && task != nil
	pid := c.State.Pid
	limit := c.HostConfig.Memory
	c.Unlock()
	s := sample{StatsResponse: containertypes.StatsResponse{Name: c.Name, ID: c.ID, Read: time.Now()}}
	if !running {
		return s
	}
	st, err := task.Stats()
	if err != nil {
		slog.Debug("stats", "id", c.ID, "err", err)
		return s
	}
	s.Running = true
	s.StatsResponse = toDockerStats(s.StatsResponse, st, limit)
	s.Networks = netStats(pid)
	return s
}

// toDockerStats maps libcontainer's cgroup statistics to Docker's.
func toDockerStats(out containertypes.StatsResponse, st *cgroups.Stats, limit int64) containertypes.StatsResponse {
	out.NumProcs = 0
	out.PidsStats = containertypes.PidsStats{Current: st.PidsStats.Current, Limit: st.PidsStats.Limit}
	cpu := st.CpuStats.CpuUsage
	out.CPUStats = containertypes.CPUStats{
		CPUUsage: containertypes.CPUUsage{
			TotalUsage: cpu.TotalUsage, PercpuUsage: cpu.PercpuUsage,
			UsageInKernelmode: cpu.UsageInKernelmode, UsageInUsermode: cpu.UsageInUsermode,
		},
		SystemUsage: systemCPUUsage(),
		OnlineCPUs:  uint32(runtimeNumCPU()),
		ThrottlingData: containertypes.ThrottlingData{
			Periods: st.CpuStats.ThrottlingData.Periods, ThrottledPeriods: st.CpuStats.ThrottlingData.ThrottledPeriods,
			ThrottledTime: st.CpuStats.ThrottlingData.ThrottledTime,
		},
	}
	mem := st.MemoryStats
	hostMem := hostMemTotal()
	lim := mem.Usage.Limit
	if limit > 0 && uint64(limit) < lim {
		lim = uint64(limit)
	}
	if lim == 0 || lim > hostMem {
		lim = hostMem
	}
	out.MemoryStats = containertypes.MemoryStats{
		Usage: mem.Usage.Usage, MaxUsage: mem.Usage.MaxUsage, Failcnt: mem.Usage.Failcnt,
		Stats: mem.Stats, Limit: lim,
	}
	var blk containertypes.BlkioStats
	conv := func(in []cgroups.BlkioStatEntry) []containertypes.BlkioStatEntry {
		var r []containertypes.BlkioStatEntry
		for _, e := range in {
			r = append(r, containertypes.BlkioStatEntry{Major: e.Major, Minor: e.Minor, Op: e.Op, Value: e.Value})
		}
		return r
	}
	blk.IoServiceBytesRecursive = conv(st.BlkioStats.IoServiceBytesRecursive)
	blk.IoServicedRecursive = conv(st.BlkioStats.IoServicedRecursive)
	out.BlkioStats = blk
	return out
}

// systemCPUUsage is the host's CPU time in nanoseconds, from /proc/stat,
// the base Docker's CPU percentage is computed against.
func systemCPUUsage() uint64 {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[0] != "cpu" {
			continue
		}
		var ticks uint64
		for _, v := range fields[1:8] {
			n, _ := strconv.ParseUint(v, 10, 64)
			ticks += n
		}
		// USER_HZ is 100 on Linux.
		return ticks * (1e9 / 100)
	}
	return 0
}

func hostMemTotal() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// netStats reads the interfaces of the container's network namespace
// (through its init's /proc/PID/net/dev), loopback left out as Docker does.
func netStats(pid int) map[string]containertypes.NetworkStats {
	if pid <= 0 {
		return nil
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return nil
	}
	out := map[string]containertypes.NetworkStats{}
	for _, line := range strings.Split(string(data), "\n")[2:] {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			continue
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
		out[name] = containertypes.NetworkStats{
			RxBytes: n(0), RxPackets: n(1), RxErrors: n(2), RxDropped: n(3),
			TxBytes: n(8), TxPackets: n(9), TxErrors: n(10), TxDropped: n(11),
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ContainersPrune removes the stopped containers that f selects (until,
// label), as `docker container prune`.
func (d *Daemon) ContainersPrune(ctx context.Context, f filters.Args) (*containertypes.PruneReport, error) {
	if err := f.Validate(map[string]bool{"until": true, "label": true, "label!": true}); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	var until time.Time
	for _, v := range f.Get("until") {
		t, err := parseUntil(v)
		if err != nil {
			return nil, err
		}
		until = t
	}
	rep := &containertypes.PruneReport{ContainersDeleted: []string{}}
	for _, c := range d.containers.List() {
		c.Lock()
		stopped := c.State.Status == container.StatusExited || c.State.Status == container.StatusCreated || c.State.Status == container.StatusDead
		labels := c.Config.Labels
		created := c.Created
		c.Unlock()
		if !stopped || (!until.IsZero() && !created.Before(until)) {
			continue
		}
		if f.Contains("label") && !f.MatchKVList("label", labels) {
			continue
		}
		if f.Contains("label!") && f.MatchKVList("label!", labels) {
			continue
		}
		size := d.rwSize(c)
		if err := d.ContainerRemove(ctx, c.ID, containertypes.RemoveOptions{}); err != nil {
			slog.Warn("prune: removing container", "id", c.ID, "err", err)
			continue
		}
		rep.ContainersDeleted = append(rep.ContainersDeleted, c.ID)
		rep.SpaceReclaimed += size
	}
	d.events.Log(eventtypes.ActionPrune, eventtypes.ContainerEventType, eventtypes.Actor{Attributes: map[string]string{"reclaimed": strconv.FormatUint(rep.SpaceReclaimed, 10)}})
	return rep, nil
}

// rwSize is the size of the container's writable layer (its upper dir on
// overlay2), for prune's reclaimed space.
func (d *Daemon) rwSize(c *container.Container) uint64 {
	dir, err := d.upperDir(c)
	if err != nil {
		return 0
	}
	var n uint64
	_ = filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += uint64(fi.Size())
			}
		}
		return nil
	})
	return n
}

func runtimeNumCPU() int { return runtime.NumCPU() }
