//go:build integration

package integrationcli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	units "github.com/docker/go-units"
)

// The security options of `docker run`, each checked by its effect inside
// the container (or refused with Docker's message), through both CLIs.
// The default set, --privileged, --read-only, --cap-add after --cap-drop
// ALL (TestDefaultConfinement), seccomp (seccomp_test.go), --device
// (TestDevice), --sysctl (TestRuntimeSysctls), --group-add
// (TestUsersAndGroupAdd), --ipc, --pid, --uts and --shm-size (ipc_test.go)
// and --init (TestInitReaper) have theirs.
func TestSecurityOptionsByEffect(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(args ...string) Result) {
		check := func(what string, want string, args ...string) {
			t.Helper()
			r := cli(append([]string{"run", "--rm"}, args...)...)
			if r.Code != 0 || r.Stdout != want {
				t.Errorf("%s: want %q, got %s", what, want, r)
			}
		}
		refused := func(what, msg string, args ...string) {
			t.Helper()
			r := cli(append([]string{"run", "--rm"}, args...)...)
			if r.Code == 0 || !strings.Contains(r.Stderr, msg) {
				t.Errorf("%s: want a refusal with %q, got %s", what, msg, r)
			}
		}
		check("no-new-privileges", "NoNewPrivs:\t1\n", "--security-opt", "no-new-privileges", "busybox", "grep", "NoNewPrivs", "/proc/self/status")
		check("default: new privileges allowed", "NoNewPrivs:\t0\n", "busybox", "grep", "NoNewPrivs", "/proc/self/status")
		check("cap-drop ALL", "CapEff:\t0000000000000000\n", "--cap-drop", "ALL", "busybox", "grep", "CapEff", "/proc/self/status")
		check("cap-drop ALL, cap-add NET_ADMIN", "CapEff:\t0000000000001000\n", "--cap-drop", "ALL", "--cap-add", "NET_ADMIN", "busybox", "grep", "CapEff", "/proc/self/status")
		check("cap-drop CHOWN", "denied\n", "--cap-drop", "CHOWN", "busybox", "sh", "-c", "touch /f; chown 1 /f 2>/dev/null || echo denied")
		// --cap-add ALL: every capability the kernel has (the host root's bounding set).
		check("cap-add ALL", "CapEff:\t"+hostCapBnd(t)+"\n", "--cap-add", "ALL", "busybox", "grep", "CapEff", "/proc/self/status")
		check("ulimit", "123\n456\n", "--ulimit", "nofile=123:456", "busybox", "sh", "-c", "ulimit -n; ulimit -Hn")
		check("oom-score-adj", "345\n", "--oom-score-adj", "345", "busybox", "cat", "/proc/self/oom_score_adj")
		refused("oom-score-adj out of range", "Invalid value 1001, range for oom score adj is [-1000, 1000]", "--oom-score-adj", "1001", "busybox", "true")
		// loop-control (10:237) is in no default rule: opening it is
		// refused by the device cgroup until a rule allows it.
		// (true, not ":": a failed redirection of a special builtin ends sh.)
		const openLoopControl = "mknod /dev/lc c 10 237 && true < /dev/lc 2>/dev/null && echo opened; true > /dev/lc 2>/dev/null || echo no-write"
		check("no device cgroup rule", "no-write\n", "busybox", "sh", "-c", openLoopControl)
		check("device-cgroup-rule", "opened\nno-write\n", "--device-cgroup-rule", "c 10:237 r", "busybox", "sh", "-c", openLoopControl)
		refused("gpus", `could not select device driver "" with capabilities: [[gpu]]`, "--gpus", "all", "busybox", "true")
		// No LSM here: accepted and kept, as Docker does on such a host.
		id := remember(strings.TrimSpace(cli("create", "--security-opt", "apparmor=unconfined", "--security-opt", "label=disable", "busybox", "true").Stdout))
		if r := cli("start", "-a", id); r.Code != 0 {
			t.Errorf("apparmor=, label= options: %s", r)
		}
		if got := shared.MustCLI(t, "inspect", "-f", "{{.HostConfig.SecurityOpt}}", id); got != "[apparmor=unconfined label=disable]" {
			t.Errorf("security options in inspect: %s", got)
		}
		shared.CLI("rm", id)
		check("userns host", "ok\n", "--userns", "host", "busybox", "echo", "ok")
		check("cgroupns private", "/\n", "--cgroupns", "private", "busybox", "sh", "-c", "grep :memory: /proc/self/cgroup | cut -d: -f3")
		refused("cgroupns host", "cgroup namespace mode \"host\" is not implemented by this engine", "--cgroupns", "host", "busybox", "true")
	})
}

// cgLimits is the container's limits cgroup in a v1 hierarchy: the parent
// of the payload cgroup its processes are in.
func cgLimits(t *testing.T, id, controller string) string {
	t.Helper()
	pid, _ := strconv.Atoi(shared.MustCLI(t, "inspect", "-f", "{{.State.Pid}}", id))
	return filepath.Dir(payloadCgroup(t, pid, controller))
}

// The resource options, each read back from the container's cgroup (or
// refused where the kernel cannot honour it), through both CLIs.
func TestResourceOptionsByEffect(t *testing.T) {
	_, blkioErr := os.Stat("/sys/fs/cgroup/blkio/blkio.weight")
	clis(t, shared, func(t *testing.T, cli func(args ...string) Result) {
		parent := fmt.Sprintf("/sdit-res-%d", os.Getpid())
		args := []string{"run", "-d", "-m", "64m", "--memory-reservation", "32m", "--memory-swap", "96m", "--oom-kill-disable",
			"--cpu-shares", "700", "--cpuset-cpus", "0", "--cpuset-mems", "0", "--cgroup-parent", parent}
		if blkioErr == nil {
			args = append(args, "--blkio-weight", "300")
		}
		r := cli(append(args, "busybox", "sleep", "1000")...)
		if r.Code != 0 {
			t.Fatal(r)
		}
		id := remember(r.Stdout)
		defer shared.CLI("rm", "-f", id)
		mem := cgLimits(t, id, "memory")
		for file, want := range map[string]string{
			"memory.limit_in_bytes":       strconv.Itoa(64 << 20),
			"memory.soft_limit_in_bytes":  strconv.Itoa(32 << 20),
			"memory.memsw.limit_in_bytes": strconv.Itoa(96 << 20),
		} {
			if got := readTrim(t, filepath.Join(mem, file)); got != want {
				t.Errorf("%s = %s, want %s", file, got, want)
			}
		}
		if got := readTrim(t, filepath.Join(mem, "memory.oom_control")); !strings.HasPrefix(got, "oom_kill_disable 1") {
			t.Errorf("memory.oom_control: %s", got)
		}
		if got := readTrim(t, filepath.Join(cgLimits(t, id, "cpu"), "cpu.shares")); got != "700" {
			t.Errorf("cpu.shares = %s", got)
		}
		cs := cgLimits(t, id, "cpuset")
		if got := readTrim(t, filepath.Join(cs, "cpuset.cpus")) + " " + readTrim(t, filepath.Join(cs, "cpuset.mems")); got != "0 0" {
			t.Errorf("cpuset cpus and mems = %s", got)
		}
		if blkioErr == nil {
			if got := readTrim(t, filepath.Join(cgLimits(t, id, "blkio"), "blkio.weight")); got != "300" {
				t.Errorf("blkio.weight = %s", got)
			}
		} else if r := cli("run", "--rm", "--blkio-weight", "300", "busybox", "true"); r.Code == 0 || !strings.Contains(r.Stderr, "your kernel does not support blkio weight") {
			t.Errorf("--blkio-weight without kernel support: %s", r)
		}
		// The limits cgroup is under the parent asked for.
		if !strings.HasPrefix(mem, "/sys/fs/cgroup/memory"+parent+"/") {
			t.Errorf("--cgroup-parent %s: limits at %s", parent, mem)
		}
		if r := cli("run", "--rm", "-m", "32m", "--memory-reservation", "64m", "busybox", "true"); r.Code == 0 ||
			!strings.Contains(r.Stderr, "Minimum memory limit can not be less than memory reservation limit") {
			t.Errorf("reservation above the limit: %s", r)
		}
		shared.MustCLI(t, "rm", "-f", id)
		// The parent the container's cgroups were made in is the user's,
		// left as Docker leaves it; the test removes its own.
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + parent)
		for _, d := range dirs {
			_ = os.Remove(d)
		}
	})
}

// docker-py (Debian's python3-docker) drives a representative set; each
// is checked by its effect, inside the container or in its cgroup.
func TestDockerPySecurityAndResources(t *testing.T) {
	const script = `
import sys, docker
c = docker.DockerClient(base_url=sys.argv[1], version="auto")
out = c.containers.run("busybox", ["sh", "-c",
    "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; ulimit -n; cat /proc/self/oom_score_adj; id -G;"
    " cat /proc/sys/net/ipv4/ip_unprivileged_port_start; df -k /dev/shm | tail -1 | awk '{print $2}';"
    " mknod /dev/lc c 10 237 && true < /dev/lc && echo device-ok"],
    cap_drop=["NET_RAW"], security_opt=["no-new-privileges"],
    ulimits=[docker.types.Ulimit(name="nofile", soft=321, hard=654)],
    oom_score_adj=17, group_add=["1234"], sysctls={"net.ipv4.ip_unprivileged_port_start": "1000"},
    shm_size="16m", device_cgroup_rules=["c 10:237 r"], remove=True)
sys.stdout.write(out.decode())
ctr = c.containers.run("busybox", ["sleep", "1000"], detach=True, mem_limit="64m", mem_reservation="32m",
    pids_limit=33, cpuset_cpus="0", cpu_shares=600, init=True)
print(ctr.id)
`
	py := "/usr/bin/python3" // Debian's, with python3-docker (hack/deps)
	cmd := exec.Command(py, "-c", script, shared.Host())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-py: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	id := remember(lines[len(lines)-1])
	defer shared.CLI("rm", "-f", id)
	want := "CapEff:\t00000000a80405fb\nNoNewPrivs:\t1\n321\n17\n0 10 1234\n1000\n16384\ndevice-ok"
	if got := strings.Join(lines[:len(lines)-1], "\n"); got != want {
		t.Errorf("docker-py run:\n%s\nwant\n%s", got, want)
	}
	mem := cgLimits(t, id, "memory")
	if got := readTrim(t, filepath.Join(mem, "memory.limit_in_bytes")) + " " + readTrim(t, filepath.Join(mem, "memory.soft_limit_in_bytes")); got != strconv.Itoa(64<<20)+" "+strconv.Itoa(32<<20) {
		t.Errorf("docker-py memory limits: %s", got)
	}
	if got := readTrim(t, filepath.Join(cgLimits(t, id, "pids"), "pids.max")); got != "33" {
		t.Errorf("docker-py pids_limit: %s", got)
	}
	if got := readTrim(t, filepath.Join(cgLimits(t, id, "cpu"), "cpu.shares")); got != "600" {
		t.Errorf("docker-py cpu_shares: %s", got)
	}
	if got := readTrim(t, filepath.Join(cgLimits(t, id, "cpuset"), "cpuset.cpus")); got != "0" {
		t.Errorf("docker-py cpuset_cpus: %s", got)
	}
	if got := shared.MustCLI(t, "exec", id, "cat", "/proc/1/comm"); got != "docker-init" {
		t.Errorf("docker-py init=True: pid 1 is %s", got)
	}
}

// memUsage is the container's memory use as `docker stats` shows it.
func memUsage(t *testing.T, cli func(args ...string) Result, id string) int64 {
	t.Helper()
	r := cli("stats", "--no-stream", "--format", "{{.MemUsage}}", id)
	if r.Code != 0 {
		t.Fatal(r)
	}
	used, _, _ := strings.Cut(strings.TrimSpace(r.Stdout), " / ")
	n, err := units.RAMInBytes(used)
	if err != nil {
		t.Fatalf("stats MemUsage %q: %v", r.Stdout, err)
	}
	return n
}

// stats follows the container's memory: 48 MiB written to its /dev/shm
// (memory the container's cgroup is charged for) show, and go when freed.
func TestStatsFollowMemory(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(args ...string) Result) {
		id := remember(shared.MustCLI(t, "run", "-d", "--shm-size", "128m", "busybox", "sleep", "1000"))
		defer shared.CLI("rm", "-f", id)
		before := memUsage(t, cli, id)
		shared.MustCLI(t, "exec", id, "dd", "if=/dev/zero", "of=/dev/shm/fill", "bs=1M", "count=48")
		after := memUsage(t, cli, id)
		if after-before < 40<<20 {
			t.Errorf("stats memory %d before, %d after allocating 48MiB", before, after)
		}
		shared.MustCLI(t, "exec", id, "rm", "/dev/shm/fill")
		freed := memUsage(t, cli, id)
		if after-freed < 40<<20 {
			t.Errorf("stats memory %d with 48MiB, %d after freeing it", after, freed)
		}
	})
}

// A health command that never exits is killed at its timeout: the check
// fails with Docker's message, the probes do not pile up, and none is left
// a zombie.
func TestHealthCommandTimeout(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(args ...string) Result) {
		r := cli("run", "-d", "--health-cmd", "sleep 1000", "--health-timeout", "300ms", "--health-interval", "400ms", "--health-retries", "2",
			"busybox", "sleep", "1000")
		if r.Code != 0 {
			t.Fatal(r)
		}
		id := remember(r.Stdout)
		defer shared.CLI("rm", "-f", id)
		waitFor(t, func() bool {
			return shared.CLI("inspect", "-f", "{{.State.Health.Status}}", id).Stdout == "unhealthy\n"
		})
		out := shared.MustCLI(t, "inspect", "-f", "{{range .State.Health.Log}}{{.ExitCode}} {{.Output}}|{{end}}", id)
		for _, res := range strings.Split(strings.TrimSuffix(out, "|"), "|") {
			if res != "-1 Health check exceeded timeout (300ms)" {
				t.Errorf("health result %q", res)
			}
		}
		pid, _ := strconv.Atoi(shared.MustCLI(t, "inspect", "-f", "{{.State.Pid}}", id))
		procs := filepath.Join(payloadCgroup(t, pid, "pids"), "cgroup.procs")
		// A killed probe is a zombie until its parent reaps it, which a
		// loaded machine may take a while to get to: one that stays so
		// for 2 s is not reaped.
		zombieSince := map[string]time.Time{}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			sleeps := 0
			for _, p := range strings.Fields(readTrim(t, procs)) {
				stat, err := os.ReadFile("/proc/" + p + "/stat")
				if err != nil {
					continue // gone since
				}
				if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
					if first, ok := zombieSince[p]; !ok {
						zombieSince[p] = time.Now()
					} else if time.Since(first) > 2*time.Second {
						t.Fatalf("zombie in the container, not reaped for %v: %s", time.Since(first).Round(time.Millisecond), stat)
					}
					continue
				}
				if cmdline, _ := os.ReadFile("/proc/" + p + "/cmdline"); p != strconv.Itoa(pid) && strings.HasPrefix(string(cmdline), "sleep\x001000") {
					sleeps++
				}
			}
			if sleeps > 1 {
				t.Fatalf("%d probes alive at once: they are not killed at their timeout", sleeps)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// Bad input of the list not tested elsewhere: update of a removed
// container (404), a volume name with "/" (400, Docker's message); the
// unknown --mount key and cp of a missing path are in volume_test.go.
func TestRuntimeBadInput(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(args ...string) Result) {
		id := remember(shared.MustCLI(t, "create", "busybox", "true"))
		shared.MustCLI(t, "rm", id)
		if r := cli("update", "--memory", "64m", id); r.Code == 0 || !strings.Contains(r.Stderr, "No such container: "+id) {
			t.Errorf("update of a removed container: %s", r)
		}
		if r := cli("volume", "create", "a/b"); r.Code == 0 || !strings.Contains(r.Stderr, `"a/b" includes invalid characters for a local volume name, only "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed`) {
			t.Errorf("volume name with /: %s", r)
		}
		if r := cli("run", "--rm", "-v", "a/b:/x", "busybox", "true"); r.Code == 0 {
			t.Errorf("-v with a volume name with /: %s", r)
		}
		if r := cli("cp", "nosuchcontainer-"+strings.ToLower(filepath.Base(t.Name()))+":/x", t.TempDir()); r.Code == 0 || !strings.Contains(r.Stderr, "No such container") {
			t.Errorf("cp from a missing container: %s", r)
		}
	})
	id := remember(shared.MustCLI(t, "create", "busybox", "true"))
	defer shared.CLI("rm", id)
	code, body := apiDo(t, "GET", "/v1.51/containers/"+id+"/archive?path=/nope", "")
	if code != 404 || !strings.Contains(body, "Could not find the file /nope") {
		t.Errorf("archive of a missing path: %d %s", code, body)
	}
}

// hostCapBnd is the test process's bounding set (as /proc shows it): every
// capability the kernel has, for root.
func hostCapBnd(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapBnd:\t"); ok {
			return v
		}
	}
	t.Fatal("no CapBnd in /proc/self/status")
	return ""
}
