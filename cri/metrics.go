package cri

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/api/server/backend"

	// A thread left in another namespace ends with its goroutine.
	_ "github.com/sdengine/engine/pkg/mainthread"
)

// The CRI metrics (ListMetricDescriptors, ListPodSandboxMetrics) are what
// the kubelet serves on /metrics/cadvisor when its PodAndContainerStatsFromCRI
// gate is on, in place of running cAdvisor: so they bear cAdvisor's names,
// units and labels. Every series starts with the labels cAdvisor's kubelet
// endpoint has; some add their own (the CPU, interface, device...).
//
// CRI carries a metric's value as an unsigned integer: the metrics in
// seconds are whole seconds.

var metricBaseLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

type metricDesc struct {
	name, help string
	typ        runtimeapi.MetricType
	labels     []string // after metricBaseLabels
}

const (
	counter = runtimeapi.MetricType_COUNTER
	gauge   = runtimeapi.MetricType_GAUGE
)

// metricDescs are the metrics served, each with values for a running
// container (or, for the network's, for a pod with a network namespace of
// its own). The blkio-based ones have values only where the kernel
// accounts I/O for the device (not for a virtual disk without a queue).
var metricDescs = []metricDesc{
	{"container_blkio_device_usage_total", "Blkio device bytes usage", counter, []string{"device", "major", "minor", "operation"}},
	{"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", counter, nil},
	{"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", counter, nil},
	{"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", counter, nil},
	{"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", counter, nil},
	{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter, []string{"cpu"}},
	{"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", counter, nil},
	{"container_file_descriptors", "Number of open file descriptors for the container.", gauge, nil},
	{"container_fs_inodes_free", "Number of available Inodes", gauge, []string{"device"}},
	{"container_fs_inodes_total", "Number of Inodes", gauge, []string{"device"}},
	{"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", gauge, []string{"device"}},
	{"container_fs_reads_bytes_total", "Cumulative count of bytes read", counter, []string{"device"}},
	{"container_fs_reads_total", "Cumulative count of reads completed", counter, []string{"device"}},
	{"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", gauge, []string{"device"}},
	{"container_fs_writes_bytes_total", "Cumulative count of bytes written", counter, []string{"device"}},
	{"container_fs_writes_total", "Cumulative count of writes completed", counter, []string{"device"}},
	{"container_last_seen", "Last time a container was seen by the exporter", gauge, nil},
	{"container_memory_cache", "Number of bytes of page cache memory.", gauge, nil},
	{"container_memory_failcnt", "Number of memory usage hits limits", counter, nil},
	{"container_memory_failures_total", "Cumulative count of memory allocation failures.", counter, []string{"failure_type", "scope"}},
	{"container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", gauge, nil},
	{"container_memory_mapped_file", "Size of memory mapped files in bytes.", gauge, nil},
	{"container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", gauge, nil},
	{"container_memory_rss", "Size of RSS in bytes.", gauge, nil},
	{"container_memory_swap", "Container swap usage in bytes.", gauge, nil},
	{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", gauge, nil},
	{"container_memory_working_set_bytes", "Current working set in bytes.", gauge, nil},
	{"container_network_receive_bytes_total", "Cumulative count of bytes received", counter, []string{"interface"}},
	{"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", counter, []string{"interface"}},
	{"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", counter, []string{"interface"}},
	{"container_network_receive_packets_total", "Cumulative count of packets received", counter, []string{"interface"}},
	{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", counter, []string{"interface"}},
	{"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", counter, []string{"interface"}},
	{"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", counter, []string{"interface"}},
	{"container_network_transmit_packets_total", "Cumulative count of packets transmitted", counter, []string{"interface"}},
	{"container_oom_events_total", "Count of out of memory events observed for the container", counter, nil},
	{"container_processes", "Number of processes running inside the container.", gauge, nil},
	{"container_sockets", "Number of open sockets for the container.", gauge, nil},
	{"container_spec_cpu_period", "CPU period of the container.", gauge, nil},
	{"container_spec_cpu_quota", "CPU quota of the container.", gauge, nil},
	{"container_spec_cpu_shares", "CPU share of the container.", gauge, nil},
	{"container_spec_memory_limit_bytes", "Memory limit for the container.", gauge, nil},
	{"container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.", gauge, nil},
	{"container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", gauge, nil},
	{"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", gauge, nil},
	{"container_threads", "Number of threads running inside the container", gauge, nil},
	{"container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero", gauge, nil},
}

var metricDescByName = func() map[string]*metricDesc {
	m := make(map[string]*metricDesc, len(metricDescs))
	for i := range metricDescs {
		m[metricDescs[i].name] = &metricDescs[i]
	}
	return m
}()

func (s *Server) ListMetricDescriptors(ctx context.Context, req *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	out := make([]*runtimeapi.MetricDescriptor, 0, len(metricDescs))
	for _, d := range metricDescs {
		out = append(out, &runtimeapi.MetricDescriptor{
			Name: d.name, Help: d.help,
			LabelKeys: append(append([]string(nil), metricBaseLabels...), d.labels...),
		})
	}
	return &runtimeapi.ListMetricDescriptorsResponse{Descriptors: out}, nil
}

func (s *Server) ListPodSandboxMetrics(ctx context.Context, req *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	var out []*runtimeapi.PodSandboxMetrics
	for _, sb := range s.pods.list() {
		m, err := s.podMetrics(ctx, sb)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return &runtimeapi.ListPodSandboxMetricsResponse{PodMetrics: out}, nil
}

// metricSet gathers one series after another for one pod or container.
type metricSet struct {
	base []string // values of metricBaseLabels
	out  []*runtimeapi.Metric
}

// add appends a series; labels are the values of the metric's own labels.
// A name or label count not in metricDescs is a bug here, never sent: the
// kubelet would drop the whole metric.
func (m *metricSet) add(name string, v uint64, labels ...string) {
	d := metricDescByName[name]
	if d == nil || len(labels) != len(d.labels) {
		slog.Error("cri metrics: series does not fit its descriptor", "name", name, "labels", labels)
		return
	}
	m.out = append(m.out, &runtimeapi.Metric{
		Name: name, MetricType: d.typ,
		LabelValues: append(append([]string(nil), m.base...), labels...),
		Value:       &runtimeapi.UInt64Value{Value: v},
	})
}

// podMetrics are the pod's network counters and its running containers'
// metrics.
func (s *Server) podMetrics(ctx context.Context, sb *sandbox) (*runtimeapi.PodSandboxMetrics, error) {
	md := sb.config.GetMetadata()
	out := &runtimeapi.PodSandboxMetrics{PodSandboxId: sb.ID}
	if sb.Ready && sb.NetNS != "" {
		// cAdvisor shows a pod's network on its sandbox's container, the
		// one named "POD" in the kubelet's Docker days.
		pm := &metricSet{base: []string{"POD", sb.ID, "", sandboxName(md), md.GetNamespace(), md.GetName()}}
		links, err := netnsLinkStats(sb.NetNS)
		if err != nil {
			// The pod may be being stopped: its namespace goes.
			slog.Debug("cri metrics: pod network", "pod", sb.ID, "err", err)
		}
		for _, l := range links {
			addNetworkMetrics(pm, l)
		}
		out.Metrics = pm.out
	}
	ctrs, err := s.podContainers(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	for _, sum := range ctrs {
		if sum.State != "running" {
			continue
		}
		c, err := s.b.ContainerInspect(ctx, sum.ID, true)
		if err != nil || c.State == nil || !c.State.Running {
			continue // gone or stopped meanwhile
		}
		cm := &metricSet{base: []string{
			c.Config.Labels[labelName], c.ID, c.Config.Labels[labelImage], strings.TrimPrefix(c.Name, "/"), md.GetNamespace(), md.GetName(),
		}}
		if err := s.containerMetrics(ctx, c, cm); err != nil {
			slog.Debug("cri metrics: container", "id", c.ID, "err", err)
			continue
		}
		out.ContainerMetrics = append(out.ContainerMetrics, &runtimeapi.ContainerMetrics{ContainerId: c.ID, Metrics: cm.out})
	}
	return out, nil
}

func addNetworkMetrics(m *metricSet, l linkStats) {
	m.add("container_network_receive_bytes_total", l.RxBytes, l.Name)
	m.add("container_network_receive_errors_total", l.RxErrors, l.Name)
	m.add("container_network_receive_packets_dropped_total", l.RxDropped, l.Name)
	m.add("container_network_receive_packets_total", l.RxPackets, l.Name)
	m.add("container_network_transmit_bytes_total", l.TxBytes, l.Name)
	m.add("container_network_transmit_errors_total", l.TxErrors, l.Name)
	m.add("container_network_transmit_packets_dropped_total", l.TxDropped, l.Name)
	m.add("container_network_transmit_packets_total", l.TxPackets, l.Name)
}

// containerMetrics adds a running container's series: the engine's stats
// (its cgroup's counters), its configuration, its processes and its
// writable layer.
func (s *Server) containerMetrics(ctx context.Context, c *backend.ContainerInspect, m *metricSet) error {
	var buf bytes.Buffer
	if err := s.b.ContainerStats(ctx, c.ID, false, true, &buf); err != nil {
		return err
	}
	var ds containertypes.StatsResponse
	if err := json.Unmarshal(buf.Bytes(), &ds); err != nil {
		return fmt.Errorf("stats of %s: %w", c.ID, err)
	}
	addStatsMetrics(m, &ds)

	if hc := c.HostConfig; hc != nil {
		m.add("container_spec_cpu_period", uint64(max(hc.CPUPeriod, 0)))
		m.add("container_spec_cpu_quota", uint64(max(hc.CPUQuota, 0)))
		m.add("container_spec_cpu_shares", uint64(max(hc.CPUShares, 0)))
		m.add("container_spec_memory_limit_bytes", uint64(max(hc.Memory, 0)))
		m.add("container_spec_memory_reservation_limit_bytes", uint64(max(hc.MemoryReservation, 0)))
		m.add("container_spec_memory_swap_limit_bytes", uint64(max(hc.MemorySwap, 0)))
	}
	if t := parseTime(c.State.StartedAt); t > 0 {
		m.add("container_start_time_seconds", uint64(t/int64(time.Second)))
	}
	m.add("container_last_seen", uint64(time.Now().Unix()))

	pid := c.State.Pid
	if memDir, err := cgroupDir(pid, "memory"); err == nil {
		kernel, oom := memoryCgroupExtras(memDir)
		if v, ok := ds.MemoryStats.Stats["kernel"]; ok { // cgroup v2's memory.stat
			kernel = v
		}
		m.add("container_memory_kernel_usage", kernel)
		m.add("container_oom_events_total", oom)
	}
	if pidsDir, err := cgroupDir(pid, "pids"); err == nil {
		p := countProcesses(pidsDir)
		m.add("container_processes", p.processes)
		m.add("container_threads", p.threads)
		m.add("container_file_descriptors", p.fds)
		m.add("container_sockets", p.sockets)
	}
	m.add("container_threads_max", ds.PidsStats.Limit)

	// The writable layer: its size, and the filesystem below it.
	dir := fmt.Sprintf("/proc/%d/root", pid)
	if c.GraphDriver.Data["UpperDir"] != "" {
		dir = c.GraphDriver.Data["UpperDir"]
	}
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Stat(dir, &st) == nil && unix.Statfs(dir, &fs) == nil {
		dev := devName(uint64(unix.Major(st.Dev)), uint64(unix.Minor(st.Dev)))
		m.add("container_fs_inodes_free", fs.Ffree, dev)
		m.add("container_fs_inodes_total", fs.Files, dev)
		m.add("container_fs_limit_bytes", fs.Blocks*uint64(fs.Bsize), dev)
		var used uint64
		if c.SizeRw != nil && *c.SizeRw > 0 {
			used = uint64(*c.SizeRw)
		}
		m.add("container_fs_usage_bytes", used, dev)
	}
	return nil
}

// addStatsMetrics adds the series that the engine's stats carry.
func addStatsMetrics(m *metricSet, ds *containertypes.StatsResponse) {
	cpu := ds.CPUStats
	m.add("container_cpu_usage_seconds_total", cpu.CPUUsage.TotalUsage/uint64(time.Second), "total")
	m.add("container_cpu_user_seconds_total", cpu.CPUUsage.UsageInUsermode/uint64(time.Second))
	m.add("container_cpu_system_seconds_total", cpu.CPUUsage.UsageInKernelmode/uint64(time.Second))
	m.add("container_cpu_cfs_periods_total", cpu.ThrottlingData.Periods)
	m.add("container_cpu_cfs_throttled_periods_total", cpu.ThrottlingData.ThrottledPeriods)
	m.add("container_cpu_cfs_throttled_seconds_total", cpu.ThrottlingData.ThrottledTime/uint64(time.Second))

	mem := ds.MemoryStats
	// The first of the keys memory.stat has: cgroup v1's hierarchical
	// total_* (cAdvisor's choice), v1's own, then v2's name.
	stat := func(keys ...string) uint64 {
		for _, k := range keys {
			if v, ok := mem.Stats[k]; ok {
				return v
			}
		}
		return 0
	}
	m.add("container_memory_usage_bytes", mem.Usage)
	m.add("container_memory_working_set_bytes", workingSet(mem.Usage, stat("total_inactive_file", "inactive_file")))
	m.add("container_memory_max_usage_bytes", mem.MaxUsage)
	m.add("container_memory_failcnt", mem.Failcnt)
	m.add("container_memory_cache", stat("total_cache", "cache", "file"))
	m.add("container_memory_rss", stat("total_rss", "rss", "anon"))
	m.add("container_memory_mapped_file", stat("total_mapped_file", "mapped_file", "file_mapped"))
	m.add("container_memory_swap", stat("total_swap", "swap"))
	m.add("container_memory_failures_total", stat("pgfault"), "pgfault", "container")
	m.add("container_memory_failures_total", stat("pgmajfault"), "pgmajfault", "container")
	m.add("container_memory_failures_total", stat("total_pgfault", "pgfault"), "pgfault", "hierarchy")
	m.add("container_memory_failures_total", stat("total_pgmajfault", "pgmajfault"), "pgmajfault", "hierarchy")

	// Block I/O by device, as cgroup v1's blkio.io_service*_recursive
	// (and v2's io.stat, which the engine gives in the same shape).
	type dev struct{ major, minor uint64 }
	type rw struct{ readBytes, writeBytes, reads, writes uint64 }
	byDev := map[dev]*rw{}
	var devs []dev // in the kernel's order
	get := func(e containertypes.BlkioStatEntry) *rw {
		d := dev{e.Major, e.Minor}
		if byDev[d] == nil {
			byDev[d] = &rw{}
			devs = append(devs, d)
		}
		return byDev[d]
	}
	for _, e := range ds.BlkioStats.IoServiceBytesRecursive {
		m.add("container_blkio_device_usage_total", e.Value, devName(e.Major, e.Minor),
			strconv.FormatUint(e.Major, 10), strconv.FormatUint(e.Minor, 10), e.Op)
		switch strings.ToLower(e.Op) {
		case "read":
			get(e).readBytes += e.Value
		case "write":
			get(e).writeBytes += e.Value
		}
	}
	for _, e := range ds.BlkioStats.IoServicedRecursive {
		switch strings.ToLower(e.Op) {
		case "read":
			get(e).reads += e.Value
		case "write":
			get(e).writes += e.Value
		}
	}
	for _, d := range devs {
		name, v := devName(d.major, d.minor), byDev[d]
		m.add("container_fs_reads_bytes_total", v.readBytes, name)
		m.add("container_fs_writes_bytes_total", v.writeBytes, name)
		m.add("container_fs_reads_total", v.reads, name)
		m.add("container_fs_writes_total", v.writes, name)
	}
}

// devName names a block device by its numbers, as the cgroup files do.
func devName(major, minor uint64) string {
	return fmt.Sprintf("%d:%d", major, minor)
}

// workingSet is the kubelet's: usage less the inactive file cache.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile < usage {
		return usage - inactiveFile
	}
	return 0
}

// cgroupDir is the directory of the cgroup of process pid that holds
// controller: cgroup v1's hierarchy of that controller, else the unified
// one.
func cgroupDir(pid int, controller string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	return cgroupDirOf(b, controller)
}

func cgroupDirOf(procCgroup []byte, controller string) (string, error) {
	unified, v1 := "", false
	for _, line := range strings.Split(strings.TrimSpace(string(procCgroup)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		v1 = true
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return filepath.Join("/sys/fs/cgroup", parts[1], parts[2]), nil
			}
		}
	}
	if !v1 && unified != "" {
		return filepath.Join("/sys/fs/cgroup", unified), nil
	}
	return "", fmt.Errorf("no %s cgroup", controller)
}

// memoryCgroupExtras reads what the engine's stats leave out: the kernel
// memory (cgroup v1's kmem; 0 on v2, whose memory.stat has it) and the
// OOM kills (v1 memory.oom_control, v2 memory.events).
func memoryCgroupExtras(dir string) (kernel, oomKills uint64) {
	if b, err := os.ReadFile(filepath.Join(dir, "memory.kmem.usage_in_bytes")); err == nil {
		kernel, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	for _, f := range []string{"memory.oom_control", "memory.events"} {
		if v, ok := keyedValue(filepath.Join(dir, f), "oom_kill"); ok {
			return kernel, v
		}
	}
	return kernel, 0
}

// keyedValue reads "key value" lines of a cgroup file.
func keyedValue(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

type processCounts struct{ processes, threads, fds, sockets uint64 }

// countProcesses counts the processes of a cgroup, their threads and
// open files, as cAdvisor does: each process's /proc entry.
func countProcesses(cgroup string) processCounts {
	var p processCounts
	b, err := os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))
	if err != nil {
		return p
	}
	for _, pid := range strings.Fields(string(b)) {
		p.processes++
		if v, ok := statusValue(filepath.Join("/proc", pid, "status"), "Threads"); ok {
			p.threads += v
		}
		fdDir := filepath.Join("/proc", pid, "fd")
		ents, err := os.ReadDir(fdDir)
		if err != nil {
			continue // ended meanwhile
		}
		for _, e := range ents {
			p.fds++
			if t, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && strings.HasPrefix(t, "socket:") {
				p.sockets++
			}
		}
	}
	return p
}

// statusValue reads a "Key:\tvalue" line of /proc/<pid>/status.
func statusValue(path, key string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// linkStats are one interface's counters.
type linkStats struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// netnsLinkStats reads the counters of the interfaces (but lo) of the
// network namespace pinned at path, through netlink on a thread that
// enters the namespace for the time of the call. The thread goes back to
// the daemon's namespace before it is unlocked; if it cannot, it stays
// locked and Go ends it with the goroutine (see cri/podns).
func netnsLinkStats(path string) ([]linkStats, error) {
	type result struct {
		links []linkStats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		links, err := linkStatsOnThread(path)
		done <- result{links, err}
	}()
	r := <-done
	return r.links, r.err
}

func linkStatsOnThread(path string) (_ []linkStats, err error) {
	target, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pod network namespace: %w", err)
	}
	defer target.Close()
	runtime.LockOSThread()
	back, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("daemon network namespace: %w", err)
	}
	defer back.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("enter pod network namespace: %w", err)
	}
	defer func() {
		if serr := unix.Setns(int(back.Fd()), unix.CLONE_NEWNET); serr != nil {
			err = errors.Join(err, fmt.Errorf("return to the daemon's network namespace: %w", serr))
			return // the thread stays locked: Go discards it
		}
		runtime.UnlockOSThread()
	}()
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("pod interfaces: %w", err)
	}
	var out []linkStats
	for _, l := range links {
		a := l.Attrs()
		if a.Name == "lo" || a.Statistics == nil {
			continue
		}
		st := a.Statistics
		out = append(out, linkStats{
			Name:    a.Name,
			RxBytes: st.RxBytes, RxPackets: st.RxPackets, RxErrors: st.RxErrors, RxDropped: st.RxDropped,
			TxBytes: st.TxBytes, TxPackets: st.TxPackets, TxErrors: st.TxErrors, TxDropped: st.TxDropped,
		})
	}
	return out, nil
}
