//go:build integration

package integrationcli

import (
	"os"
	"strings"
	"testing"
)

func TestDefaultConfinement(t *testing.T) {
	r := shared.CLI("run", "--rm", "busybox", "sh", "-c",
		`grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/1/status; ip -o link | cut -d: -f2; cat /proc/kcore | wc -c; echo 1 > /proc/sys/kernel/domainname 2>/dev/null || echo ro-sys; echo $$`)
	if r.Code != 0 {
		t.Fatal(r)
	}
	for _, want := range []string{"CapEff:\t00000000a80425fb", "Seccomp:\t2", " lo\n", "\n0\n", "ro-sys", "\n1\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("missing %q in:\n%s", want, r.Stdout)
		}
	}
	r = shared.CLI("run", "--rm", "--privileged", "busybox", "grep", "-E", "^(CapEff|Seccomp):", "/proc/1/status")
	if !strings.Contains(r.Stdout, "Seccomp:\t0") || strings.Contains(r.Stdout, "a80425fb") {
		t.Errorf("--privileged: %s", r)
	}
	r = shared.CLI("run", "--rm", "--cap-drop", "ALL", "--cap-add", "NET_ADMIN", "busybox", "grep", "CapEff", "/proc/1/status")
	if !strings.Contains(r.Stdout, "0000000000001000") {
		t.Errorf("--cap-drop ALL --cap-add NET_ADMIN: %s", r)
	}
	r = shared.CLI("run", "--rm", "--read-only", "busybox", "touch", "/x")
	if r.Code == 0 || !strings.Contains(r.Stderr, "Read-only") {
		t.Errorf("--read-only: %s", r)
	}
	hostLinks := shared.CLI("run", "--rm", "--network", "host", "busybox", "ip", "-o", "link").Stdout
	if strings.Count(hostLinks, "\n") < 2 {
		t.Errorf("--network host sees only %q", hostLinks)
	}
}

func TestCgroupLimits(t *testing.T) {
	id := remember(shared.MustCLI(t, "run", "-d", "-m", "64m", "--cpus", "0.5", "--pids-limit", "40", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	// Find the container's cgroup from the host, whatever the layout.
	pid := shared.MustCLI(t, "inspect", "--format", "{{.State.Pid}}", id)
	cg, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	limits := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		ctrl, path := parts[1], parts[2]
		read := func(p string) string {
			b, _ := os.ReadFile(p)
			return strings.TrimSpace(string(b))
		}
		switch {
		case ctrl == "memory":
			limits["memory"] = read("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes")
		case ctrl == "pids":
			limits["pids"] = read("/sys/fs/cgroup/pids" + path + "/pids.max")
		case strings.Contains(ctrl, "cpu,") || ctrl == "cpu":
			limits["cpu"] = read("/sys/fs/cgroup/" + ctrl + path + "/cpu.cfs_quota_us")
		case ctrl == "" && limits["memory"] == "":
			limits["memory"] = read("/sys/fs/cgroup" + path + "/memory.max")
			limits["pids"] = read("/sys/fs/cgroup" + path + "/pids.max")
			limits["cpu"] = strings.Fields(read("/sys/fs/cgroup"+path+"/cpu.max") + " x")[0]
		}
	}
	if limits["memory"] != "67108864" || limits["pids"] != "40" || limits["cpu"] != "50000" {
		t.Fatalf("limits in the container's cgroups: %v (cgroup file %s)", limits, cg)
	}
}
