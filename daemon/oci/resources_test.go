package oci

import (
	"encoding/json"
	"testing"

	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestSetResources(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	u64 := func(n uint64) *uint64 { return &n }
	u16 := func(n uint16) *uint16 { return &n }
	for _, tc := range []struct {
		name string
		set  func(*SpecOptions)
		want specs.LinuxResources
	}{
		{name: "nothing", set: func(*SpecOptions) {}},
		{
			name: "cpuset cpus only",
			set:  func(o *SpecOptions) { o.CpusetCpus = "0" },
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0"}},
		},
		{
			name: "cpuset mems only",
			set:  func(o *SpecOptions) { o.CpusetMems = "0" },
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Mems: "0"}},
		},
		{
			name: "cpus, shares and cpusets together",
			set: func(o *SpecOptions) {
				o.NanoCPUs, o.CPUShares, o.CpusetCpus, o.CpusetMems = 1.5e9, 512, "0-1,3", "0"
			},
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{
				Shares: u64(512), Quota: i64(150000), Period: u64(100000), Cpus: "0-1,3", Mems: "0",
			}},
		},
		{
			name: "tiny cpus get the kernel's 1ms minimum",
			set:  func(o *SpecOptions) { o.NanoCPUs = 1 },
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: i64(1000), Period: u64(100000)}},
		},
		{
			name: "blkio weight",
			set:  func(o *SpecOptions) { o.BlkioWeight = 300 },
			want: specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{Weight: u16(300)}},
		},
		{
			name: "pids limit",
			set:  func(o *SpecOptions) { o.PidsLimit = i64(40) },
			want: specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(40)}},
		},
		{name: "pids 0 is unlimited", set: func(o *SpecOptions) { o.PidsLimit = i64(0) }},
		{
			name: "memory reservation alone",
			set:  func(o *SpecOptions) { o.MemoryReservation = 32 << 20 },
			want: specs.LinuxResources{Memory: &specs.LinuxMemory{Reservation: i64(32 << 20)}},
		},
		{name: "pids -1 is unlimited", set: func(o *SpecOptions) { o.PidsLimit = i64(-1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOpts()
			tc.set(&o)
			var got specs.LinuxResources
			setResources(&got, o)
			// Compare as the runtime sees them: the JSON of config.json.
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Fatalf("resources\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestSetResourcesMemory(t *testing.T) {
	for _, tc := range []struct {
		name         string
		memory, swap int64
		wantLimit    int64
		wantSwap     int64 // when the kernel limits swap
	}{
		{name: "swap defaults to twice memory", memory: 64 << 20, wantLimit: 64 << 20, wantSwap: 128 << 20},
		{name: "explicit swap", memory: 64 << 20, swap: 96 << 20, wantLimit: 64 << 20, wantSwap: 96 << 20},
		{name: "unlimited swap", memory: 64 << 20, swap: -1, wantLimit: 64 << 20, wantSwap: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOpts()
			o.Memory, o.MemorySwap = tc.memory, tc.swap
			var r specs.LinuxResources
			setResources(&r, o)
			if r.Memory == nil || r.Memory.Limit == nil || *r.Memory.Limit != tc.wantLimit {
				t.Fatalf("memory %+v", r.Memory)
			}
			if !swapLimitSupported() {
				if r.Memory.Swap != nil {
					t.Fatalf("swap set without kernel support: %d", *r.Memory.Swap)
				}
				return
			}
			if r.Memory.Swap == nil || *r.Memory.Swap != tc.wantSwap {
				t.Fatalf("swap %v, want %d", r.Memory.Swap, tc.wantSwap)
			}
		})
	}
}

// Build carries the new limits through to the spec it returns.
func TestBuildCarriesCpusetAndBlkio(t *testing.T) {
	o := baseOpts()
	o.CpusetCpus, o.CpusetMems, o.BlkioWeight = "0", "0", 500
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Linux.Resources
	if r.CPU == nil || r.CPU.Cpus != "0" || r.CPU.Mems != "0" || r.CPU.Quota != nil || r.CPU.Shares != nil {
		t.Errorf("cpu %+v", r.CPU)
	}
	if r.BlockIO == nil || r.BlockIO.Weight == nil || *r.BlockIO.Weight != 500 {
		t.Errorf("blockIO %+v", r.BlockIO)
	}
}

// --oom-score-adj is the process's; --oom-kill-disable the memory
// cgroup's, on cgroup v1 only (v2 has no such switch; Docker drops it).
func TestOOMOptions(t *testing.T) {
	o := baseOpts()
	o.OomScoreAdj, o.OomKillDisable = 345, true
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Process.OOMScoreAdj == nil || *s.Process.OOMScoreAdj != 345 {
		t.Errorf("oom_score_adj %v", s.Process.OOMScoreAdj)
	}
	m := s.Linux.Resources.Memory
	if cgroups.IsCgroup2UnifiedMode() {
		if m != nil && m.DisableOOMKiller != nil {
			t.Errorf("oom killer disabled on cgroup v2")
		}
	} else if m == nil || m.DisableOOMKiller == nil || !*m.DisableOOMKiller {
		t.Errorf("oom killer not disabled: %+v", m)
	}
	if s, _ := Build(baseOpts()); *s.Process.OOMScoreAdj != 0 {
		t.Errorf("default oom_score_adj %d", *s.Process.OOMScoreAdj)
	}
}
