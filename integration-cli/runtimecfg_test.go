//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Docker's network sysctls for a container with a network namespace of its
// own, the user's --sysctl over them, none of them for --network host, and
// a sysctl that is not namespaced refused (it would be the host's). Our CLI
// has no --sysctl or --domainname: the stock CLI sends them.
func TestRuntimeSysctls(t *testing.T) {
	const both = "cat /proc/sys/net/ipv4/ping_group_range /proc/sys/net/ipv4/ip_unprivileged_port_start"
	r := shared.Stock("run", "--rm", "-u", "1000:1000", "busybox", "sh", "-c", both)
	if r.Code != 0 || r.Stdout != "0\t2147483647\n0\n" {
		t.Errorf("default network sysctls: %s", r)
	}
	// ip_unprivileged_port_start=0 is what lets a user without
	// CAP_NET_BIND_SERVICE listen on port 80 (busybox's ping knows only
	// raw sockets, so ping_group_range is not tried here).
	r = shared.Stock("run", "--rm", "-u", "1000:1000", "--cap-drop", "ALL", "busybox", "sh", "-c", "nc -l -p 80 & sleep 0.3; kill $! && echo ok")
	if r.Code != 0 || r.Stdout != "ok\n" {
		t.Errorf("port 80 without capabilities: %s", r)
	}
	r = shared.Stock("run", "--rm", "--sysctl", "net.ipv4.ip_unprivileged_port_start=1024", "--sysctl", "net.ipv4.ping_group_range=1 1", "busybox", "sh", "-c", both)
	if r.Code != 0 || r.Stdout != "1\t1\n1024\n" {
		t.Errorf("--sysctl over the defaults: %s", r)
	}
	r = shared.Stock("run", "--rm", "--sysctl", "kernel.shmmni=1234", "busybox", "cat", "/proc/sys/kernel/shmmni")
	if r.Code != 0 || r.Stdout != "1234\n" {
		t.Errorf("--sysctl kernel.shmmni (IPC namespace): %s", r)
	}

	id := remember(shared.MustCLI(t, "run", "-d", "--network", "host", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	for k := range ociSpec(t, id).Linux.Sysctl {
		if strings.HasPrefix(k, "net.") {
			t.Errorf("--network host: the spec sets %s, which would be the host's", k)
		}
	}
	r = shared.Stock("run", "--rm", "--network", "host", "--sysctl", "net.ipv4.ip_unprivileged_port_start=0", "busybox", "true")
	if r.Code == 0 {
		t.Errorf("a net sysctl with --network host was accepted: %s", r)
	}
	// Not namespaced: the host's own setting. Its current value, so that
	// even a regression could not change the host.
	cur, err := os.ReadFile("/proc/sys/kernel/printk_ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	r = shared.Stock("run", "--rm", "--sysctl", "kernel.printk_ratelimit="+strings.TrimSpace(string(cur)), "busybox", "true")
	if r.Code == 0 || !strings.Contains(r.Stderr, "kernel.printk_ratelimit") {
		t.Errorf("a sysctl outside the container's namespaces was accepted: %s", r)
	}
}

func TestRuntimeDomainname(t *testing.T) {
	r := shared.Stock("run", "--rm", "--hostname", "foo", "--domainname", "example.org", "busybox",
		"cat", "/proc/sys/kernel/hostname", "/proc/sys/kernel/domainname")
	if r.Code != 0 || r.Stdout != "foo\nexample.org\n" {
		t.Errorf("--domainname: %s", r)
	}
}

// A profile given with --security-opt seccomp= is enforced, on the
// container's process and on its execs, for --privileged too (which alone
// runs unconfined); seccomp=unconfined lifts the default profile.
func TestSeccompCustomProfileEnforced(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "no-chown.json")
	body := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["chown","chown32","fchownat","lchown"],"action":"SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(profile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	chown := []string{"chown", "42", "/bin/true"}
	for _, tc := range []struct {
		opts    []string
		refused bool
	}{
		{nil, false},
		{[]string{"--privileged"}, false},
		{[]string{"--security-opt", "seccomp=" + profile}, true},
		{[]string{"--privileged", "--security-opt", "seccomp=" + profile}, true},
		{[]string{"--security-opt", "seccomp=unconfined"}, false},
	} {
		clis(t, shared, func(t *testing.T, cli func(...string) Result) {
			args := append(append([]string{"run", "--rm"}, tc.opts...), "busybox")
			r := cli(append(args, chown...)...)
			if refused := r.Code != 0; refused != tc.refused || (refused && !strings.Contains(r.Stderr, "Operation not permitted")) {
				t.Errorf("%v: chown refused=%v, want %v: %s", tc.opts, refused, tc.refused, r)
			}
		})
		args := append(append([]string{"run", "-d"}, tc.opts...), "busybox", "sleep", "1000")
		id := remember(shared.MustCLI(t, args...))
		r := shared.CLI(append([]string{"exec", id}, chown...)...)
		if refused := r.Code != 0; refused != tc.refused {
			t.Errorf("%v: exec chown refused=%v, want %v: %s", tc.opts, refused, tc.refused, r)
		}
		st := shared.MustCLI(t, "exec", id, "grep", "^Seccomp:", "/proc/self/status")
		wantFiltered := tc.refused || len(tc.opts) == 0
		if filtered := strings.HasSuffix(st, "2"); filtered != wantFiltered {
			t.Errorf("%v: %q, want filtered=%v", tc.opts, st, wantFiltered)
		}
		shared.CLI("rm", "-f", id)
	}
	r := shared.CLI("create", "--security-opt", "writable-cgroups=potato", "busybox")
	if r.Code == 0 || !strings.Contains(r.Stderr, `invalid --security-opt 2: "writable-cgroups=potato"`) {
		remember(r.Stdout)
		t.Errorf("a bad security option was not refused at create: %s", r)
	}
}

// writable-cgroups opens the container's own cgroup, and only that: what
// it writes there (or creates below) cannot raise the limits, which are
// one level up, and the cgroup filesystem itself stays read-only.
func TestWritableCgroupsKeepLimits(t *testing.T) {
	script := `
		if [ "$(stat -f -c %t /sys/fs/cgroup)" = 63677270 ]; then pids=/sys/fs/cgroup; else pids=/sys/fs/cgroup/pids; fi
		mkdir $pids/sub && echo made-child
		echo max > $pids/pids.max 2>/dev/null && echo raised-own-copy
		mkdir /sys/fs/cgroup/x 2>/dev/null && echo made-top
		ls $pids/release_agent 2>/dev/null && echo release-agent
		# a subshell: a shell that cannot fork a job exits
		( for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40; do sleep 30 & done ) 2>/dev/null
		n=0; for p in /proc/[0-9]*; do n=$((n+1)); done
		[ $n -le 30 ] && echo limited $n`
	r := shared.CLI("run", "--rm", "--pids-limit", "30", "--security-opt", "writable-cgroups", "busybox", "sh", "-c", script)
	out := r.Stdout
	if !strings.Contains(out, "made-child") || strings.Contains(out, "made-top") || strings.Contains(out, "release-agent") || !strings.Contains(out, "limited") {
		t.Errorf("writable-cgroups: %s", r)
	}
	t.Logf("writable-cgroups: %s", out)
	r = shared.CLI("run", "--rm", "busybox", "sh", "-c", "mkdir /sys/fs/cgroup/pids/sub || mkdir /sys/fs/cgroup/sub")
	if r.Code == 0 || !strings.Contains(r.Stderr, "Read-only file system") {
		t.Errorf("cgroups writable by default: %s", r)
	}
}

// A read-only bind is read-only all the way down: a host mount below its
// source is not writable in the container either (Docker's recursive
// read-only binds).
func TestReadOnlyBindIsRecursive(t *testing.T) {
	src := t.TempDir()
	sub := filepath.Join(src, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs below the bind's source: %v", err)
	}
	defer func() { _ = unix.Unmount(sub, unix.MNT_DETACH) }()
	for _, cli := range []func(...string) Result{shared.CLI, shared.Stock} {
		r := cli("run", "--rm", "-v", src+":/m:ro", "busybox", "sh", "-c",
			"touch /m/top 2>/dev/null && echo top-writable; touch /m/sub/x 2>/dev/null && echo sub-writable; grep ' /m/sub ' /proc/self/mountinfo | grep -q ' ro,' && echo sub-ro")
		if r.Code != 0 || r.Stdout != "sub-ro\n" {
			t.Errorf("-v %s:/m:ro: %s", src, r)
		}
	}
	if _, err := os.Stat(filepath.Join(sub, "x")); err == nil {
		t.Error("the container wrote below a read-only bind")
	}
}
