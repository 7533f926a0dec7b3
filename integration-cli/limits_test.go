//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
)

// Root in a container cannot raise the limits it was given
// (daemon/execdriver/shim/cgroups.go): they live on a cgroup above the container's, out of its sight,
// and its own view of the controllers is read-only. Proved for a plain
// container and a systemd one (whose name=systemd and cgroup2 hierarchies
// are writable), by trying each write as root and by a bounded fork bomb.

// limitArgs are the limits every container here gets (stock CLI flags).
var limitArgs = []string{
	"-m", "256m", "--memory-swap", "512m", "--cpus", "0.5", "--cpu-shares", "512",
	"--cpuset-cpus", "0", "--pids-limit", "100",
}

// limitWrites are the writes root tries inside: each would lift a limit.
// Paths are the container's view on v1 and v2.
var limitWrites = []struct{ v1, v2, value string }{
	{"pids/pids.max", "pids.max", "100000"},
	{"memory/memory.memsw.limit_in_bytes", "memory.swap.max", "17179869184"},
	{"memory/memory.limit_in_bytes", "memory.max", "8589934592"},
	{"cpu/cpu.cfs_quota_us", "cpu.max", "-1"},
	{"cpu/cpu.shares", "cpu.weight", "10000"},
	{"cpuset/cpuset.cpus", "cpuset.cpus", "0-1"},
}

// limitsDir is the host's directory of a container's limits cgroup for a
// controller (cgroupfs driver: <parent>/<id>, above <parent>/<id>/payload).
func limitsDir(t *testing.T, controller, id string) string {
	t.Helper()
	pattern := filepath.Join("/sys/fs/cgroup", controller, "*", id)
	if cgroups.IsCgroup2UnifiedMode() {
		pattern = filepath.Join("/sys/fs/cgroup", "*", id)
	}
	dirs, _ := filepath.Glob(pattern)
	if len(dirs) != 1 {
		t.Fatalf("limits cgroup of %s: %v", id[:12], dirs)
	}
	return dirs[0]
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// hostLimits reads the limits the host enforces for the container.
func hostLimits(t *testing.T, id string) map[string]string {
	t.Helper()
	if cgroups.IsCgroup2UnifiedMode() {
		dir := limitsDir(t, "", id)
		out := map[string]string{}
		for _, f := range []string{"pids.max", "memory.max", "memory.swap.max", "cpu.max", "cpu.weight", "cpuset.cpus"} {
			out[f] = readTrim(t, filepath.Join(dir, f))
		}
		return out
	}
	return map[string]string{
		"pids.max":                    readTrim(t, filepath.Join(limitsDir(t, "pids", id), "pids.max")),
		"memory.limit_in_bytes":       readTrim(t, filepath.Join(limitsDir(t, "memory", id), "memory.limit_in_bytes")),
		"memory.memsw.limit_in_bytes": readTrim(t, filepath.Join(limitsDir(t, "memory", id), "memory.memsw.limit_in_bytes")),
		"cpu.cfs_quota_us":            readTrim(t, filepath.Join(limitsDir(t, "cpu", id), "cpu.cfs_quota_us")),
		"cpu.shares":                  readTrim(t, filepath.Join(limitsDir(t, "cpu", id), "cpu.shares")),
		"cpuset.cpus":                 readTrim(t, filepath.Join(limitsDir(t, "cpuset", id), "cpuset.cpus")),
	}
}

func TestLimitsHoldAgainstContainerRoot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		systemd bool
	}{
		{"plain", []string{"busybox", "sleep", "300"}, false},
		{"systemd", []string{"--init=systemd", systemdImage}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.systemd {
				needSystemdImage(t)
			}
			args := append(append([]string{"run", "-d"}, limitArgs...), tc.args...)
			id := remember(shared.MustCLI(t, args...))
			defer shared.CLI("rm", "-f", id)
			if tc.systemd {
				waitBooted(t, id)
			}
			before := hostLimits(t, id)
			if before["pids.max"] != "100" {
				t.Fatalf("pids limit on the host: %q", before["pids.max"])
			}
			for _, w := range limitWrites {
				f := w.v1
				if cgroups.IsCgroup2UnifiedMode() {
					f = w.v2
				}
				r := shared.CLI("exec", id, "sh", "-c", "echo "+w.value+" > /sys/fs/cgroup/"+f)
				if r.Code == 0 {
					t.Errorf("root in the container wrote %s to %s", w.value, f)
				}
			}
			// Nor can it make the view writable, or mount a hierarchy.
			for _, cmd := range []string{
				"mount -o remount,rw /sys/fs/cgroup",
				"mount -t cgroup -o pids none /mnt",
			} {
				if r := shared.CLI("exec", id, "sh", "-c", cmd); r.Code == 0 {
					t.Errorf("%q succeeded in the container", cmd)
				}
			}
			if after := hostLimits(t, id); !mapsEqual(before, after) {
				t.Errorf("limits changed on the host:\nbefore %v\nafter  %v", before, after)
			}

			// A fork bomb, bounded to 300 attempts, stops at the limit: the
			// kernel counts the refused forks in the limits cgroup.
			pidsDir := limitsDir(t, "pids", id)
			shared.CLI("exec", id, "sh", "-c", `i=0; while [ $i -lt 300 ]; do sleep 120 & i=$((i+1)); done 2>/dev/null`)
			cur, _ := strconv.Atoi(readTrim(t, filepath.Join(pidsDir, "pids.current")))
			if cur > 100 || cur < 50 {
				t.Errorf("pids.current %d under a limit of 100", cur)
			}
			// Counted where a limit was hit: the payload carries a copy of
			// the limits for programs to read, and is hit first.
			failed := eventCount(readTrim(t, filepath.Join(pidsDir, "pids.events")), "max") +
				eventCount(readTrim(t, filepath.Join(pidsDir, "payload", "pids.events")), "max")
			if failed == 0 {
				t.Errorf("no fork was refused under --pids-limit 100 (pids.current %d)", cur)
			}
			t.Logf("%s: fork refused %d time(s) at %d processes; the shell gives up at its first refused fork", tc.name, failed, cur)
		})
	}
}

// eventCount reads a counter from a cgroup events file ("max 12").
func eventCount(events, key string) int {
	for _, l := range strings.Split(events, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == key {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The systemd container's own subtree is writable where systemd needs it
// (name=systemd, and cgroup2 on a hybrid host): it created its units there.
func TestSystemdOwnsItsSubtreeOnly(t *testing.T) {
	needSystemdImage(t)
	id := remember(shared.MustCLI(t, "run", "-d", "--init=systemd", "--pids-limit", "200", systemdImage))
	defer shared.CLI("rm", "-f", id)
	waitBooted(t, id)
	view := shared.MustCLI(t, "exec", id, "sh", "-c", "grep ' /sys/fs/cgroup' /proc/self/mountinfo")
	for _, line := range strings.Split(view, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		mnt, opts := f[4], f[5]
		writable := strings.HasPrefix(opts, "rw")
		switch mnt {
		case "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified":
			if !writable {
				t.Errorf("%s is read-only: systemd cannot boot", mnt)
			}
		default:
			if writable && !cgroups.IsCgroup2UnifiedMode() {
				t.Errorf("%s is writable in the container: %s", mnt, line)
			}
		}
	}
	if cgroups.IsCgroup2UnifiedMode() {
		return
	}
	// systemd made its units below the payload cgroup, on the host.
	payload := filepath.Join(limitsDir(t, "systemd", id), "payload")
	if _, err := os.Stat(filepath.Join(payload, "init.scope")); err != nil {
		t.Errorf("systemd's init.scope is not in the payload cgroup: %v", err)
	}
}
