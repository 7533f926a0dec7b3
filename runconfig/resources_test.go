package runconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestValidateResources(t *testing.T) {
	host := Host{NCPU: 2, Cpus: "0-1", Mems: "0", BlkioWeight: true}
	noBlkio := host
	noBlkio.BlkioWeight = false
	noControllers := host
	noControllers.Controllers = map[string]bool{}
	pidsOnly := host
	pidsOnly.Controllers = map[string]bool{"pids": true}
	pids := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name string
		r    containertypes.Resources
		host Host
		want string // "" = valid; else a part of the error, which must name the flag
	}{
		{name: "nothing set", r: containertypes.Resources{}},
		{name: "memory 6MB", r: containertypes.Resources{Memory: MinMemory}},
		{name: "memory 1k", r: containertypes.Resources{Memory: 1024}, want: "--memory 1KiB: Minimum memory limit allowed is 6MB"},
		{name: "memory negative", r: containertypes.Resources{Memory: -1}, want: "--memory"},
		{name: "swap unlimited", r: containertypes.Resources{Memory: 64 << 20, MemorySwap: -1}},
		{name: "swap equal", r: containertypes.Resources{Memory: 64 << 20, MemorySwap: 64 << 20}},
		{name: "swap larger", r: containertypes.Resources{Memory: 64 << 20, MemorySwap: 128 << 20}},
		{name: "swap smaller", r: containertypes.Resources{Memory: 64 << 20, MemorySwap: 32 << 20}, want: "--memory-swap 32MiB"},
		{name: "swap below -1", r: containertypes.Resources{Memory: 64 << 20, MemorySwap: -5}, want: "--memory-swap -5"},
		{name: "swap without memory", r: containertypes.Resources{MemorySwap: 100 << 20}, want: "--memory-swap"},
		{name: "cpus 1.5", r: containertypes.Resources{NanoCPUs: 1.5e9}},
		{name: "cpus all", r: containertypes.Resources{NanoCPUs: 2e9}},
		{name: "cpus tiny", r: containertypes.Resources{NanoCPUs: 1}},
		{name: "cpus negative", r: containertypes.Resources{NanoCPUs: -1e9}, want: "--cpus -1"},
		{name: "cpus too many", r: containertypes.Resources{NanoCPUs: 100e9}, want: "--cpus 100: the host has only 2 CPUs"},
		{name: "cpus just over", r: containertypes.Resources{NanoCPUs: 2e9 + 1}, want: "--cpus 2.000000001"},
		{name: "cpus unknown host", r: containertypes.Resources{NanoCPUs: 100e9}, host: Host{}},
		{name: "cpu shares", r: containertypes.Resources{CPUShares: 512}},
		{name: "reservation", r: containertypes.Resources{Memory: 64 << 20, MemoryReservation: 32 << 20}},
		{name: "reservation alone", r: containertypes.Resources{MemoryReservation: 32 << 20}},
		{name: "reservation above memory", r: containertypes.Resources{Memory: 32 << 20, MemoryReservation: 64 << 20}, want: "Minimum memory limit can not be less than memory reservation limit"},
		{name: "reservation tiny", r: containertypes.Resources{MemoryReservation: 1024}, want: "Minimum memory reservation allowed is 6MB"},
		{name: "reservation negative", r: containertypes.Resources{MemoryReservation: -1}, want: "--memory-reservation -1"},
		{name: "gpus", r: containertypes.Resources{DeviceRequests: []containertypes.DeviceRequest{{Count: -1, Capabilities: [][]string{{"gpu"}}}}},
			want: `could not select device driver "" with capabilities: [[gpu]]`},
		{name: "cpu shares 1", r: containertypes.Resources{CPUShares: 1}},
		{name: "cpu shares negative", r: containertypes.Resources{CPUShares: -5}, want: "invalid CPU shares (-5): value must be a positive integer"},
		{name: "pids 40", r: containertypes.Resources{PidsLimit: pids(40)}},
		{name: "pids 0", r: containertypes.Resources{PidsLimit: pids(0)}},
		{name: "pids -1", r: containertypes.Resources{PidsLimit: pids(-1)}},
		{name: "pids -5", r: containertypes.Resources{PidsLimit: pids(-5)}, want: "--pids-limit -5"},
		{name: "v2 no controllers, nothing set", r: containertypes.Resources{}, host: noControllers},
		{name: "v2 no controllers, memory", r: containertypes.Resources{Memory: 64 << 20}, host: noControllers, want: "cannot use --memory: the host's cgroups have no memory controller"},
		{name: "v2 no controllers, reservation", r: containertypes.Resources{MemoryReservation: 64 << 20}, host: noControllers, want: "--memory-reservation"},
		{name: "v2 no controllers, cpus", r: containertypes.Resources{NanoCPUs: 1e9}, host: noControllers, want: "--cpus: the host's cgroups have no cpu controller"},
		{name: "v2 no controllers, shares", r: containertypes.Resources{CPUShares: 512}, host: noControllers, want: "--cpu-shares"},
		{name: "v2 no controllers, cpuset", r: containertypes.Resources{CpusetCpus: "0"}, host: noControllers, want: "--cpuset-cpus"},
		{name: "v2 no controllers, mems", r: containertypes.Resources{CpusetMems: "0"}, host: noControllers, want: "--cpuset-mems"},
		{name: "v2 no controllers, pids", r: containertypes.Resources{PidsLimit: pids(50)}, host: noControllers, want: "--pids-limit: the host's cgroups have no pids controller"},
		{name: "v2 no controllers, pids unlimited", r: containertypes.Resources{PidsLimit: pids(-1)}, host: noControllers},
		{name: "v2 pids only, pids", r: containertypes.Resources{PidsLimit: pids(50)}, host: pidsOnly},
		{name: "v2 pids only, memory", r: containertypes.Resources{Memory: 64 << 20}, host: pidsOnly, want: "memory controller"},
		{name: "blkio unset", r: containertypes.Resources{}, host: noBlkio},
		{name: "blkio 10", r: containertypes.Resources{BlkioWeight: 10}},
		{name: "blkio 1000", r: containertypes.Resources{BlkioWeight: 1000}},
		{name: "blkio 5", r: containertypes.Resources{BlkioWeight: 5}, want: "--blkio-weight 5"},
		{name: "blkio 1001", r: containertypes.Resources{BlkioWeight: 1001}, want: "--blkio-weight 1001"},
		{name: "blkio unsupported", r: containertypes.Resources{BlkioWeight: 500}, host: noBlkio, want: "--blkio-weight 500: your kernel does not support blkio weight"},
		{name: "blkio out of range, unsupported", r: containertypes.Resources{BlkioWeight: 5}, host: noBlkio, want: "between 10 and 1000"},
		{name: "cpuset 0", r: containertypes.Resources{CpusetCpus: "0"}},
		{name: "cpuset list", r: containertypes.Resources{CpusetCpus: "1,0", CpusetMems: "0"}},
		{name: "cpuset range", r: containertypes.Resources{CpusetCpus: "0-1"}},
		{name: "cpuset absent", r: containertypes.Resources{CpusetCpus: "99"}, want: `--cpuset-cpus "99": CPU 99 is not available (the host has 0-1)`},
		{name: "cpuset partly absent", r: containertypes.Resources{CpusetCpus: "0-2"}, want: "CPU 2 is not available"},
		{name: "cpuset garbage", r: containertypes.Resources{CpusetCpus: "abc"}, want: `--cpuset-cpus "abc"`},
		{name: "cpuset backwards", r: containertypes.Resources{CpusetCpus: "1-0"}, want: "--cpuset-cpus"},
		{name: "cpuset open range", r: containertypes.Resources{CpusetCpus: "0-"}, want: "--cpuset-cpus"},
		{name: "cpuset trailing comma", r: containertypes.Resources{CpusetCpus: "0,"}, want: "--cpuset-cpus"},
		{name: "cpuset negative", r: containertypes.Resources{CpusetCpus: "-1"}, want: "--cpuset-cpus"},
		{name: "cpuset huge", r: containertypes.Resources{CpusetCpus: "0-99999999999999999999"}, want: "--cpuset-cpus"},
		{name: "mems absent", r: containertypes.Resources{CpusetMems: "5"}, want: `--cpuset-mems "5": memory node 5 is not available`},
		{name: "mems garbage", r: containertypes.Resources{CpusetMems: "x"}, want: "--cpuset-mems"},
		{name: "cpuset unknown host", r: containertypes.Resources{CpusetCpus: "99"}, host: Host{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.host
			if reflect.DeepEqual(h, Host{}) && !strings.Contains(tc.name, "unknown host") {
				h = host
			}
			err := ValidateResources(&tc.r, h)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
			if !errdefs.IsInvalidParameter(err) {
				t.Fatalf("want an invalid parameter (400), got %T", err)
			}
		})
	}
}

func TestParseCpuset(t *testing.T) {
	for in, want := range map[string]Cpuset{
		"0":           {{0, 0}},
		"0-3":         {{0, 3}},
		"6,0-3":       {{0, 3}, {6, 6}},
		"0-1,2,3-4,9": {{0, 4}, {9, 9}},
		"1-3,2-5":     {{1, 5}},
		" 0-1\n":      {{0, 1}},
	} {
		got, err := ParseCpuset(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCpuset(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ",", "a", "1-", "-1", "3-1", "1,,2", "0x1", "+1", "1 - 2", "2000000"} {
		if got, err := ParseCpuset(bad); err == nil {
			t.Errorf("ParseCpuset(%q) = %v; want error", bad, got)
		}
	}
	have, _ := ParseCpuset("0-3,8-9")
	for req, missing := range map[string]int{"0": -1, "0-3": -1, "3,8-9": -1, "4": 4, "2-5": 4, "9-10": 10, "7": 7} {
		r, _ := ParseCpuset(req)
		n, ok := have.Covers(r)
		if ok != (missing < 0) || (!ok && n != missing) {
			t.Errorf("0-3,8-9 covers %s: %d %v; want missing %d", req, n, ok, missing)
		}
	}
}

func TestProbeHost(t *testing.T) {
	write := func(root string, files map[string]string) {
		for name, content := range files {
			p := filepath.Join(root, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func(old string) { cgroupRoot = old }(cgroupRoot)

	// cgroup v1 without CFQ/BFQ (as on a kernel with only mq-deadline).
	cgroupRoot = t.TempDir()
	write(cgroupRoot, map[string]string{
		"cpuset/cpuset.effective_cpus": "0-3\n", "cpuset/cpuset.cpus": "0-7\n", "cpuset/cpuset.effective_mems": "0\n",
		"blkio/blkio.throttle.read_bps_device": "",
	})
	h := ProbeHost()
	if h.Cpus != "0-3" || h.Mems != "0" || h.BlkioWeight || h.NCPU < 1 {
		t.Errorf("v1 without weight: %+v", h)
	}
	write(cgroupRoot, map[string]string{"blkio/blkio.bfq.weight": "100\n"})
	if h := ProbeHost(); !h.BlkioWeight {
		t.Errorf("v1 with blkio.bfq.weight: %+v", h)
	}
	if want := map[string]bool{"cpuset": true, "memory": false, "cpu": false, "pids": false}; !reflect.DeepEqual(h.Controllers, want) {
		t.Errorf("v1 controllers %v, want %v", h.Controllers, want)
	}

	// cgroup v2: the weight files live in child cgroups only.
	cgroupRoot = t.TempDir()
	write(cgroupRoot, map[string]string{
		"cgroup.controllers": "cpuset cpu io memory pids\n", "cpuset.cpus.effective": "0-1\n", "cpuset.mems.effective": "0\n",
	})
	h = ProbeHost()
	if h.Cpus != "0-1" || h.Mems != "0" || h.BlkioWeight {
		t.Errorf("v2 without weight: %+v", h)
	}
	write(cgroupRoot, map[string]string{"system.slice/io.weight": "default 100\n"})
	if h := ProbeHost(); !h.BlkioWeight {
		t.Errorf("v2 with io.weight: %+v", h)
	}
	write(cgroupRoot, map[string]string{"cgroup.controllers": "cpuset cpu memory pids\n"})
	if h := ProbeHost(); h.BlkioWeight {
		t.Errorf("v2 without the io controller: %+v", h)
	}
	if h := ProbeHost(); !reflect.DeepEqual(h.Controllers, map[string]bool{"cpuset": true, "cpu": true, "memory": true, "pids": true}) {
		t.Errorf("v2 controllers %v", h.Controllers)
	}
	// A unified layout on a hybrid machine: a cgroup2 root with none.
	write(cgroupRoot, map[string]string{"cgroup.controllers": ""})
	if h := ProbeHost(); h.Controllers == nil || len(h.Controllers) != 0 {
		t.Errorf("v2 without controllers: %v, want an empty set", h.Controllers)
	}

	// This machine: whatever it has, the lists must parse.
	cgroupRoot = "/sys/fs/cgroup"
	h = ProbeHost()
	if _, err := ParseCpuset(h.Cpus); err != nil {
		t.Errorf("host CPUs %q: %v", h.Cpus, err)
	}
	if _, err := ParseCpuset(h.Mems); err != nil {
		t.Errorf("host memory nodes %q: %v", h.Mems, err)
	}
}
