//go:build integration

package integrationcli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/runconfig"
)

// limitCase is one bad resource limit: the flags as given to docker run,
// the same request as a create body's HostConfig, and what the error must
// say (the flag's name at least).
type limitCase struct {
	name       string
	args       []string
	hostConfig string
	want       string
	// oursLocal: our CLI refuses the value itself (the stock CLI sends it).
	oursLocal bool
}

func badLimits(host runconfig.Host) []limitCase {
	cases := []limitCase{
		{"memory 1k", []string{"-m", "1k"}, `{"Memory":1024}`, "--memory 1KiB: Minimum memory limit allowed is 6MB", false},
		{"swap below memory", []string{"-m", "64m", "--memory-swap", "32m"}, `{"Memory":67108864,"MemorySwap":33554432}`, "--memory-swap", false},
		{"swap without memory", []string{"--memory-swap", "100m"}, `{"MemorySwap":104857600}`, "--memory-swap", false},
		{"cpus negative", []string{"--cpus", "-1"}, `{"NanoCpus":-1000000000}`, "--cpus", true},
		{"cpus above the host", []string{"--cpus", "100000"}, `{"NanoCpus":100000000000000}`, "--cpus", false},
		{"cpu shares negative", []string{"--cpu-shares", "-5"}, `{"CpuShares":-5}`, "invalid CPU shares (-5)", false},
		{"pids below -1", []string{"--pids-limit", "-5"}, `{"PidsLimit":-5}`, "--pids-limit -5", false},
		{"blkio weight 5", []string{"--blkio-weight", "5"}, `{"BlkioWeight":5}`, "--blkio-weight 5", false},
		{"blkio weight 1001", []string{"--blkio-weight", "1001"}, `{"BlkioWeight":1001}`, "--blkio-weight 1001", false},
		{"cpuset garbage", []string{"--cpuset-cpus", "abc"}, `{"CpusetCpus":"abc"}`, "--cpuset-cpus", false},
		{"cpuset backwards", []string{"--cpuset-cpus", "1-0"}, `{"CpusetCpus":"1-0"}`, "--cpuset-cpus", false},
		{"cpuset absent CPU", []string{"--cpuset-cpus", "9999"}, `{"CpusetCpus":"9999"}`, "--cpuset-cpus", false},
		{"cpuset-mems garbage", []string{"--cpuset-mems", "x"}, `{"CpusetMems":"x"}`, "--cpuset-mems", false},
		{"cpuset-mems absent node", []string{"--cpuset-mems", "9999"}, `{"CpusetMems":"9999"}`, "--cpuset-mems", false},
	}
	if !host.BlkioWeight {
		cases = append(cases, limitCase{"blkio weight unsupported", []string{"--blkio-weight", "500"}, `{"BlkioWeight":500}`,
			"--blkio-weight 500: your kernel does not support blkio weight", false})
	}
	return cases
}

// allIDs is every container of the shared daemon, stopped ones too.
func allIDs(t *testing.T) []string {
	t.Helper()
	ids := strings.Fields(shared.MustCLI(t, "ps", "-aq", "--no-trunc"))
	slices.Sort(ids)
	return ids
}

// Bad limits are refused by the daemon with a 400 that names the flag,
// before anything exists: the Engine API directly, our CLI and the stock
// CLI alike (docker run exits 125), and no container or name is left.
func TestLimitsValidationRefused(t *testing.T) {
	cases := badLimits(runconfig.ProbeHost())
	before := allIDs(t)
	t.Run("api", func(t *testing.T) {
		for _, c := range cases {
			body := fmt.Sprintf(`{"Image":"busybox","Cmd":["true"],"HostConfig":%s}`, c.hostConfig)
			status, resp := apiDo(t, "POST", "/v1.44/containers/create?name=lim-api", body)
			if status != 400 || !strings.Contains(resp, c.want) {
				t.Errorf("%s: %s: got %d %s; want 400 containing %q", c.name, body, status, resp, c.want)
			}
		}
	})
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		ours := strings.HasSuffix(t.Name(), "/ours")
		name := "lim-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
		for _, c := range cases {
			args := append(append([]string{"run", "-d", "--name", name}, c.args...), "busybox", "true")
			r := cli(args...)
			fromDaemon := !(ours && c.oursLocal)
			if r.Code != 125 || strings.Contains(r.Stderr, "Error response from daemon") != fromDaemon || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("%s: docker %s: %s\nwant exit 125 and an error containing %q (from the daemon: %v)", c.name, strings.Join(args, " "), r, c.want, fromDaemon)
			}
		}
		// The name was never reserved.
		id := remember(shared.MustCLI(t, "create", "--name", name, "busybox", "true"))
		shared.MustCLI(t, "rm", id)
	})
	if after := allIDs(t); !slices.Equal(before, after) {
		t.Errorf("docker ps -a changed: before %v, after %v", before, after)
	}
}

// What each CLI refuses or lets through itself for edge values.
func TestLimitsValidationCLIEdges(t *testing.T) {
	before := allIDs(t)
	// NanoCPUs 0 means "not set" on the wire, so only a client can refuse
	// --cpus 0: ours does, naming the flag.
	r := shared.CLI("run", "-d", "--cpus", "0", "busybox", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, `invalid argument "0" for "--cpus" flag`) {
		t.Errorf("our --cpus 0: %s", r)
	}
	// Both CLIs refuse what does not parse, before asking the daemon.
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		for _, c := range []struct{ flag, value string }{
			{"--memory-swap", "-5"}, {"--memory", "-1"}, {"--blkio-weight", "-1"}, {"--cpus", "0.0000000001"},
		} {
			r := cli("run", "-d", c.flag, c.value, "busybox", "true")
			if r.Code != 125 || !strings.Contains(r.Stderr, c.flag) || strings.Contains(r.Stderr, "Error response from daemon") {
				t.Errorf("%s %s: %s", c.flag, c.value, r)
			}
		}
	})
	if after := allIDs(t); !slices.Equal(before, after) {
		t.Errorf("docker ps -a changed: before %v, after %v", before, after)
	}
	// The stock CLI sends --cpus 0 as NanoCpus 0, which is "no limit", as
	// with Docker: the container is created without a CPU quota.
	id := remember(mustStockOK(t, "create", "--cpus", "0", "busybox", "true"))
	defer shared.CLI("rm", "-f", id)
	if nano := shared.MustCLI(t, "inspect", "--format", "{{.HostConfig.NanoCpus}}", id); nano != "0" {
		t.Errorf("stock --cpus 0: NanoCpus %s", nano)
	}
}

func mustStockOK(t *testing.T, args ...string) string {
	t.Helper()
	r := shared.Stock(args...)
	if r.Code != 0 {
		t.Fatalf("stock docker %s: %s", strings.Join(args, " "), r)
	}
	return strings.TrimSpace(r.Stdout)
}

// runtimeSpec reads the OCI spec the daemon wrote for a running
// container, which must have linux.resources.
func runtimeSpec(t *testing.T, id string) *specs.Spec {
	t.Helper()
	s := ociSpec(t, id)
	if s.Linux == nil || s.Linux.Resources == nil {
		t.Fatalf("no linux.resources in the spec of %s", id[:12])
	}
	return s
}

// Good limits reach the runtime spec and the container.
func TestLimitsValidationGoodValuesApplied(t *testing.T) {
	host := runconfig.ProbeHost()
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		args := []string{"run", "-d", "-m", "64m", "--memory-swap", "128m", "--cpus", "0.5", "-c", "512",
			"--cpuset-cpus", "0", "--cpuset-mems", "0", "--pids-limit", "40"}
		if host.BlkioWeight {
			args = append(args, "--blkio-weight", "300")
		}
		r := cli(append(args, "busybox", "sleep", "1000")...)
		if r.Code != 0 {
			t.Fatalf("docker %s: %s", strings.Join(args, " "), r)
		}
		id := remember(r.Stdout)
		defer shared.CLI("rm", "-f", id)
		res := runtimeSpec(t, id).Linux.Resources
		if res.Memory == nil || res.Memory.Limit == nil || *res.Memory.Limit != 64<<20 {
			t.Errorf("memory %+v", res.Memory)
		} else if res.Memory.Swap != nil && *res.Memory.Swap != 128<<20 {
			t.Errorf("memory+swap %d", *res.Memory.Swap)
		}
		cpu := res.CPU
		if cpu == nil || cpu.Cpus != "0" || cpu.Mems != "0" || cpu.Shares == nil || *cpu.Shares != 512 ||
			cpu.Quota == nil || *cpu.Quota != 50000 || cpu.Period == nil || *cpu.Period != 100000 {
			t.Errorf("cpu %+v", cpu)
		}
		if res.Pids == nil || res.Pids.Limit == nil || *res.Pids.Limit != 40 {
			t.Errorf("pids %+v", res.Pids)
		}
		if host.BlkioWeight && (res.BlockIO == nil || res.BlockIO.Weight == nil || *res.BlockIO.Weight != 300) {
			t.Errorf("blockIO %+v", res.BlockIO)
		}
		// The kernel applied the cpuset: the container may run on CPU 0
		// and allocate from node 0 only (whatever the cgroup layout).
		st := shared.MustCLI(t, "exec", id, "grep", "-E", "^(Cpus|Mems)_allowed_list:", "/proc/1/status")
		if !strings.Contains(st, "Cpus_allowed_list:\t0\n") || !strings.HasSuffix(st, "Mems_allowed_list:\t0") {
			t.Errorf("cpuset inside the container:\n%s", st)
		}
	})
	// 0 and -1 are "unlimited" for --pids-limit, and -1 for --memory-swap.
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		for _, pids := range []string{"0", "-1"} {
			r := cli("run", "-d", "--pids-limit", pids, "-m", "64m", "--memory-swap", "-1", "busybox", "sleep", "1000")
			if r.Code != 0 {
				t.Fatalf("--pids-limit %s: %s", pids, r)
			}
			id := remember(r.Stdout)
			res := runtimeSpec(t, id).Linux.Resources
			if res.Pids != nil {
				t.Errorf("--pids-limit %s: pids %+v", pids, res.Pids)
			}
			if res.Memory == nil || (res.Memory.Swap != nil && *res.Memory.Swap != -1) {
				t.Errorf("--memory-swap -1: %+v", res.Memory)
			}
			shared.MustCLI(t, "rm", "-f", id)
		}
	})
}
