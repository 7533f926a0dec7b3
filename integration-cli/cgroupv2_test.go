//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCgroupV2NestedUnifiedHost is the cgroup v2 path (docs/systemd.md,
// "cgroup v2"), on a machine whose own cgroups are v1 hybrid: a nested
// systemd host booted by our engine with the unified layout
// (io.sdengine.cgroup-layout=unified: /sys/fs/cgroup is its own subtree of
// this machine's cgroup2 hierarchy, writable, in a private cgroup
// namespace), so that systemd there runs in unified mode and the engine
// inside it, with the systemd cgroup driver, sees a v2 host. That engine
// runs a plain container and a systemd one, registers the latter with
// machined and stops it with SIGRTMIN+3, and no cgroup is left. The
// hierarchy has no controllers here (all are bound to v1), so limits are
// not covered: see the docs.
func TestCgroupV2NestedUnifiedHost(t *testing.T) {
	// Registered before the host starts, so it runs after the host is
	// removed: the host's cgroups on this machine are gone, in every
	// hierarchy.
	var hostID string
	t.Cleanup(func() {
		if hostID == "" {
			return
		}
		left, _ := filepath.Glob("/sys/fs/cgroup/*/docker/" + hostID)
		if len(left) > 0 {
			t.Errorf("the host's cgroups are left behind: %v", left)
		}
	})
	h := startNestedHost(t, "--annotation", "io.sdengine.cgroup-layout=unified")
	hostID = h.ID
	in, mustIn, inner, mustInner := h.In, h.MustIn, h.Inner, h.MustInner

	// The host: cgroup2 alone at /sys/fs/cgroup, rooted at its own
	// subtree, and systemd in unified mode there.
	if fs := mustIn("stat", "-fc", "%T", "/sys/fs/cgroup"); fs != "cgroup2fs" {
		t.Fatalf("host /sys/fs/cgroup is %s, want cgroup2fs", fs)
	}
	if v1 := in("grep", " - cgroup ", "/proc/self/mountinfo"); v1.Stdout != "" {
		t.Errorf("v1 hierarchies mounted in the unified host:\n%s", v1.Stdout)
	}
	if root := strings.Fields(mustIn("findmnt", "-no", "FSROOT", "/sys/fs/cgroup")); len(root) != 1 || root[0] != "/" {
		t.Errorf("host's cgroup2 mount root %v, want / (its cgroup namespace's)", root)
	}
	if !strings.Contains(mustIn("cat", "/proc/1/cgroup")+"\n", "0::/init.scope\n") {
		t.Errorf("host's systemd is not in /init.scope of its own tree:\n%s", mustIn("cat", "/proc/1/cgroup"))
	}
	payload := "/sys/fs/cgroup/unified/docker/" + h.ID + "/payload"
	if _, err := os.Stat(payload + "/init.scope"); err != nil {
		t.Errorf("the host's systemd did not make its tree in its payload cgroup on this machine: %v", err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/unified/docker/" + h.ID + "/init.scope"); err == nil {
		t.Errorf("the host wrote in its limits cgroup")
	}

	// The engine inside sees a v2 host run by systemd.
	if v := mustInner("info", "--format", "{{.CgroupVersion}} {{.CgroupDriver}}"); v != "2 systemd" {
		t.Errorf("inner engine's cgroup version and driver %q, want \"2 systemd\"", v)
	}

	// A plain container: a scope of its own below its limits slice, a 0::
	// line; its /sys/fs/cgroup is its own, read-only.
	plain := mustInner("run", "-d", "--name", "plain", "busybox", "sleep", "60")
	pid := mustInner("inspect", "--format", "{{.State.Pid}}", plain)
	scope := "/machine.slice/machine-docker.slice/machine-docker-" + plain + ".slice/docker-" + plain + ".scope"
	if cg := mustIn("cat", "/proc/"+pid+"/cgroup"); !strings.Contains(cg+"\n", "0::"+scope+"\n") {
		t.Errorf("plain container's cgroup is not its scope %s:\n%s", scope, cg)
	}
	if st := mustIn("systemctl", "show", "-P", "ActiveState", "docker-"+plain+".scope"); st != "active" {
		t.Errorf("docker-%s.scope is %s", plain, st)
	}
	if status := in("systemctl", "status", "--no-pager", "docker-"+plain+".scope"); !strings.Contains(status.Stdout, "sleep 60") {
		t.Errorf("systemctl status of the scope does not show the container's process:\n%s", status)
	}
	if cg := mustInner("exec", plain, "cat", "/proc/self/cgroup"); !strings.Contains(cg+"\n", "0::/\n") {
		t.Errorf("plain container's own view of its cgroup:\n%s", cg)
	}
	if m := strings.Fields(mustInner("exec", plain, "grep", " /sys/fs/cgroup ", "/proc/self/mounts")); len(m) < 4 || m[2] != "cgroup2" || !strings.HasPrefix(m[3], "ro,") {
		t.Errorf("plain container's /sys/fs/cgroup: %s, want a read-only cgroup2 mount", m)
	}
	if r := inner("exec", plain, "mkdir", "/sys/fs/cgroup/itx"); r.Code == 0 {
		t.Errorf("a plain container created a cgroup")
	}

	// No controller is enabled in this cgroup2 hierarchy (they are all
	// bound to v1 on this machine): a limit is refused at create, naming
	// the flag, rather than failing the start or going unenforced.
	for _, flag := range [][]string{{"-m", "64m"}, {"--pids-limit", "50"}, {"--cpus", "0.5"}} {
		r := inner(append(append([]string{"create"}, flag...), "busybox", "true")...)
		if r.Code == 0 || !strings.Contains(r.Stderr, "cannot use ") || !strings.Contains(r.Stderr, " controller for containers") {
			t.Errorf("%v on a v2 host without controllers: %s", flag, r)
		}
	}

	// A systemd container: boots to running with its own writable
	// subtree, registered with machined.
	sd := sdContainerInNestedHost(t, h, "sdc", "--init=systemd")
	if st := strings.TrimSpace(inner("exec", "sdc", "systemctl", "is-system-running").Stdout); st != "running" {
		t.Errorf("systemd container is %q, want running; failed units:\n%s", st,
			inner("exec", "sdc", "systemctl", "--failed", "--no-pager").Stdout)
	}
	sdScope := "/sys/fs/cgroup/machine.slice/machine-docker.slice/machine-docker-" + sd + ".slice/docker-" + sd + ".scope"
	for what, cmd := range map[string][]string{
		"cgroup2 at /sys/fs/cgroup": {"sh", "-c", `test "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs`},
		"read-write":                {"sh", "-c", `grep -q ' /sys/fs/cgroup cgroup2 rw,' /proc/self/mounts`},
		"its PID 1 in /init.scope":  {"grep", "-qx", "0::/init.scope", "/proc/1/cgroup"},
		"a cgroup it makes":         {"sh", "-c", "mkdir /sys/fs/cgroup/itw && echo $$ >/sys/fs/cgroup/itw/cgroup.procs && grep -x 0::/itw /proc/self/cgroup"},
		"systemd's own units":       {"test", "-d", "/sys/fs/cgroup/system.slice/systemd-journald.service"},
	} {
		if r := inner(append([]string{"exec", "sdc"}, cmd...)...); r.Code != 0 {
			t.Errorf("systemd container: %s: %s", what, r)
		}
	}
	// What it made is in its scope, seen from the host; the host's tree,
	// its limits slice and the host's cgroup namespace are out of reach.
	if _, err := os.Stat(filepath.Join(payload, sdScope[len("/sys/fs/cgroup"):], "itw")); err != nil {
		t.Errorf("the container's cgroup is not in its scope on this machine: %v", err)
	}
	if in("test", "-d", sdScope+"/init.scope").Code != 0 {
		t.Errorf("the container's systemd did not make its tree in its scope")
	}
	if mine, its := mustIn("readlink", "/proc/self/ns/cgroup"), mustInner("exec", "sdc", "readlink", "/proc/1/ns/cgroup"); mine == its {
		t.Errorf("the systemd container shares the host's cgroup namespace %s", mine)
	}
	for what, cmd := range map[string][]string{
		"see the host's slices":           {"sh", "-c", "ls /sys/fs/cgroup | grep -q machine.slice"},
		"see its limits slice":            {"sh", "-c", "grep -rqs machine-docker /proc/1/cgroup /proc/self/mountinfo"},
		"mount the host's hierarchy":      {"sh", "-c", "mkdir -p /run/itcg && mount -t cgroup2 none /run/itcg"},
		"write above its subtree (sysfs)": {"mkdir", "/sys/fs/itx"},
	} {
		if r := inner(append([]string{"exec", "sdc"}, cmd...)...); r.Code == 0 {
			t.Errorf("the systemd container could %s: %s", what, r)
		}
	}
	if procs := mustIn("cat", "/sys/fs/cgroup/machine.slice/machine-docker.slice/machine-docker-"+sd+".slice/cgroup.procs"); procs != "" {
		t.Errorf("processes in the limits slice itself: %s", procs)
	}
	if !strings.Contains(mustIn("machinectl", "list", "--no-legend", "--no-pager"), "sdc ") {
		t.Errorf("machinectl list does not show sdc")
	}

	// docker stop halts it with SIGRTMIN+3: a clean exit 0, no SIGKILL.
	if sig := mustInner("inspect", "--format", "{{.Config.StopSignal}}", "sdc"); sig != "SIGRTMIN+3" {
		t.Errorf("stop signal %q", sig)
	}
	start := time.Now()
	mustInner("stop", "-t", "20", "sdc")
	if st := mustInner("inspect", "--format", "{{.State.ExitCode}}", "sdc"); st != "0" {
		t.Errorf("exit code after docker stop: %s, want 0 (a clean halt)", st)
	}
	t.Logf("docker stop of the systemd container took %s", time.Since(start).Round(time.Millisecond))
	for i := 0; strings.Contains(mustIn("machinectl", "list", "--no-legend", "--no-pager"), "sdc "); i++ {
		if i > 100 {
			t.Fatalf("sdc still registered after it stopped")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// No cgroup left behind by either container.
	mustInner("rm", "-f", "sdc", plain)
	for _, id := range []string{sd, plain} {
		for _, unit := range []string{"docker-" + id + ".scope", "machine-docker-" + id + ".slice"} {
			if st := mustIn("systemctl", "show", "-P", "ActiveState", unit); st == "active" {
				t.Errorf("%s still active after rm", unit)
			}
		}
	}
	if left := in("sh", "-c", "ls -d /sys/fs/cgroup/machine.slice/machine-docker.slice/machine-docker-* 2>/dev/null").Stdout; left != "" {
		t.Errorf("cgroups left behind in the host:\n%s", left)
	}
}

// TestCgroupUnifiedLayoutUnprivileged: the unified layout for an
// unprivileged systemd container on this hybrid machine. systemd boots in
// unified mode in its own writable cgroup2 subtree; the v1 hierarchies
// still hold the container to its limits (here its memory limit), which
// live one level above, out of its sight; nothing is left after rm.
func TestCgroupUnifiedLayoutUnprivileged(t *testing.T) {
	needSystemdImage(t)
	id := remember(shared.MustCLI(t, "run", "-d", "--init=systemd", "-m", "256m",
		"--annotation", "io.sdengine.cgroup-layout=unified", systemdImage))
	defer func() {
		shared.CLI("rm", "-f", id)
		if left, _ := filepath.Glob("/sys/fs/cgroup/*/docker/" + id); len(left) > 0 {
			t.Errorf("cgroups left behind: %v", left)
		}
	}()
	waitBooted(t, id)
	for what, cmd := range map[string][]string{
		"cgroup2 alone at /sys/fs/cgroup": {"sh", "-c", `test "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs && ! grep -q ' - cgroup ' /proc/self/mountinfo`},
		"read-write":                      {"sh", "-c", `grep -q ' /sys/fs/cgroup cgroup2 rw,' /proc/self/mounts`},
		"its PID 1 in /init.scope":        {"grep", "-qx", "0::/init.scope", "/proc/1/cgroup"},
	} {
		if r := shared.CLI(append([]string{"exec", id}, cmd...)...); r.Code != 0 {
			t.Errorf("%s: %s", what, r)
		}
	}
	for what, cmd := range map[string][]string{
		"see its limits cgroup":   {"sh", "-c", "grep -q docker /proc/1/cgroup /proc/self/mountinfo"},
		"mount a v1 hierarchy":    {"sh", "-c", "mkdir -p /run/itcg && mount -t cgroup -o memory none /run/itcg"},
		"write above its subtree": {"mkdir", "/sys/fs/itx"},
	} {
		if r := shared.CLI(append([]string{"exec", id}, cmd...)...); r.Code == 0 {
			t.Errorf("the container could %s: %s", what, r)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/unified/docker/" + id + "/payload/init.scope"); err != nil {
		t.Errorf("its systemd's tree is not in its payload cgroup: %v", err)
	}
	b, err := os.ReadFile("/sys/fs/cgroup/memory/docker/" + id + "/memory.limit_in_bytes")
	if err != nil || strings.TrimSpace(string(b)) != "268435456" {
		t.Errorf("v1 memory limit of the limits cgroup: %q %v", b, err)
	}
	shared.MustCLI(t, "stop", "-t", "20", id)
	if code := shared.MustCLI(t, "inspect", "--format", "{{.State.ExitCode}}", id); code != "0" {
		t.Errorf("exit code after docker stop: %s", code)
	}
}
