package cri

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/cri/podns"
)

func TestMetricDescriptors(t *testing.T) {
	resp, err := (&Server{}).ListMetricDescriptors(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range resp.Descriptors {
		if seen[d.Name] {
			t.Errorf("%s twice", d.Name)
		}
		seen[d.Name] = true
		if d.Help == "" || len(d.LabelKeys) < len(metricBaseLabels) {
			t.Errorf("%s: help %q, labels %q", d.Name, d.Help, d.LabelKeys)
		}
	}
	// What the kubelet's cAdvisor-less /metrics/cadvisor needs most.
	for _, n := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_network_receive_bytes_total", "container_fs_usage_bytes"} {
		if !seen[n] {
			t.Errorf("no %s", n)
		}
	}
}

// Every series the engine's stats give fits its descriptor, and the
// units are cAdvisor's.
func TestStatsMetrics(t *testing.T) {
	var ds containertypes.StatsResponse
	ds.CPUStats.CPUUsage = containertypes.CPUUsage{TotalUsage: 3_500_000_000, UsageInUsermode: 2_000_000_000, UsageInKernelmode: 1_000_000_000}
	ds.CPUStats.ThrottlingData = containertypes.ThrottlingData{Periods: 10, ThrottledPeriods: 4, ThrottledTime: 2_000_000_000}
	ds.MemoryStats = containertypes.MemoryStats{Usage: 1000, MaxUsage: 2000, Failcnt: 1, Stats: map[string]uint64{
		"total_inactive_file": 300, "total_cache": 400, "total_rss": 500, "mapped_file": 60, "pgfault": 7, "pgmajfault": 1,
	}}
	ds.BlkioStats.IoServiceBytesRecursive = []containertypes.BlkioStatEntry{{Major: 8, Minor: 0, Op: "Read", Value: 4096}, {Major: 8, Minor: 0, Op: "Write", Value: 8192}, {Major: 8, Minor: 0, Op: "Total", Value: 12288}}
	ds.BlkioStats.IoServicedRecursive = []containertypes.BlkioStatEntry{{Major: 8, Minor: 0, Op: "Read", Value: 1}, {Major: 8, Minor: 0, Op: "Write", Value: 2}}
	m := &metricSet{base: []string{"app", "id", "img", "k8s_app", "ns", "pod"}}
	addStatsMetrics(m, &ds)
	got := map[string]uint64{}
	for _, s := range m.out {
		d := metricDescByName[s.Name]
		if d == nil || len(s.LabelValues) != len(metricBaseLabels)+len(d.labels) {
			t.Fatalf("%s: labels %q do not fit", s.Name, s.LabelValues)
		}
		if _, ok := got[s.Name]; !ok {
			got[s.Name] = s.Value.Value
		}
	}
	want := map[string]uint64{
		"container_cpu_usage_seconds_total":         3,
		"container_cpu_user_seconds_total":          2,
		"container_cpu_system_seconds_total":        1,
		"container_cpu_cfs_throttled_seconds_total": 2,
		"container_cpu_cfs_throttled_periods_total": 4,
		"container_memory_usage_bytes":              1000,
		"container_memory_working_set_bytes":        700,
		"container_memory_cache":                    400,
		"container_memory_rss":                      500,
		"container_memory_mapped_file":              60,
		"container_memory_failures_total":           7,
		"container_blkio_device_usage_total":        4096,
		"container_fs_reads_bytes_total":            4096,
		"container_fs_writes_bytes_total":           8192,
		"container_fs_reads_total":                  1,
		"container_fs_writes_total":                 2,
	}
	for n, v := range want {
		if got[n] != v {
			t.Errorf("%s = %d, want %d", n, got[n], v)
		}
	}
}

func TestCgroupDirOf(t *testing.T) {
	v1 := "12:pids:/system.slice/x.scope\n4:cpu,cpuacct:/system.slice/x.scope\n3:memory:/system.slice/x.scope\n0::/system.slice/x.scope\n"
	for c, want := range map[string]string{
		"pids":   "/sys/fs/cgroup/pids/system.slice/x.scope",
		"cpu":    "/sys/fs/cgroup/cpu,cpuacct/system.slice/x.scope",
		"memory": "/sys/fs/cgroup/memory/system.slice/x.scope",
	} {
		if got, err := cgroupDirOf([]byte(v1), c); err != nil || got != want {
			t.Errorf("v1 %s: %q %v, want %q", c, got, err, want)
		}
	}
	if _, err := cgroupDirOf([]byte(v1), "hugetlb"); err == nil {
		t.Error("v1 without hugetlb: no error")
	}
	if got, err := cgroupDirOf([]byte("0::/kubepods/pod1/c1\n"), "memory"); err != nil || got != "/sys/fs/cgroup/kubepods/pod1/c1" {
		t.Errorf("v2: %q %v", got, err)
	}
}

// This process's cgroup has at least this process, its threads and files.
func TestCountProcesses(t *testing.T) {
	dir, err := cgroupDir(os.Getpid(), "pids")
	if err != nil {
		t.Skip(err)
	}
	p := countProcesses(dir)
	if p.processes < 1 || p.threads < p.processes || p.fds < 3 {
		t.Errorf("%s: %+v", dir, p)
	}
}

// The counters come from the pod's namespace, not the daemon's: a
// namespace of the test's own with a veth pair of its own.
func TestNetnsLinkStats(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	dir := filepath.Join(t.TempDir(), "ns")
	ns, err := podns.Pin(dir, podns.Options{Net: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := podns.Release(dir); err != nil {
			t.Error(err)
		}
	}()
	if out, err := exec.Command("nsenter", "--net="+ns.Net, "ip", "link", "add", "crimetric0", "type", "veth", "peer", "name", "crimetric1").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	links, err := netnsLinkStats(ns.Net)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"crimetric0", "crimetric1"}) {
		t.Errorf("links %q, want the veth pair only (lo left out)", names)
	}
	// The calling thread is back in the test's namespace.
	if _, err := os.Stat("/sys/class/net/crimetric0"); err == nil {
		t.Error("veth visible outside its namespace")
	}
	if _, err := netnsLinkStats(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing namespace: no error")
	}
}
