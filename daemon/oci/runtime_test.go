package oci

import (
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestBuildDomainname(t *testing.T) {
	o := baseOpts()
	o.Domainname = "example.org"
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Domainname != "example.org" || s.Hostname != "h" {
		t.Errorf("hostname %q domainname %q", s.Hostname, s.Domainname)
	}
}

func TestBuildSysctls(t *testing.T) {
	own, err := Build(baseOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !ownNetNS(own) {
		t.Fatal("baseOpts should give the container its own network namespace")
	}
	for _, d := range defaultNetSysctls {
		if !sysctlExists(d.key) {
			continue
		}
		if got := own.Linux.Sysctl[d.key]; got != d.value {
			t.Errorf("own network namespace: %s=%q, want %q", d.key, got, d.value)
		}
	}

	o := baseOpts()
	o.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "1024", "kernel.shmmax": "42"}
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Linux.Sysctl["net.ipv4.ip_unprivileged_port_start"] != "1024" || s.Linux.Sysctl["kernel.shmmax"] != "42" {
		t.Errorf("the user's sysctls do not win: %v", s.Linux.Sysctl)
	}
	o.Sysctls["kernel.shmmax"] = "43"
	if s.Linux.Sysctl["kernel.shmmax"] != "42" {
		t.Error("the spec shares the caller's map")
	}

	// The host's network namespace (and one the container joins) is not
	// the container's to tune: no defaults.
	host := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UTSNamespace}}}}
	joined := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/proc/1/ns/net"}}}}
	for name, s := range map[string]*specs.Spec{"host": host, "joined": joined} {
		if got := sysctls(s, false, nil); got != nil {
			t.Errorf("%s network namespace: sysctls %v", name, got)
		}
		if got := sysctls(s, false, map[string]string{"kernel.shmmax": "1"}); len(got) != 1 {
			t.Errorf("%s network namespace: user's sysctls %v", name, got)
		}
	}
}

func TestBuildMaskedAndReadonlyPaths(t *testing.T) {
	for _, tc := range []struct {
		name               string
		privileged         bool
		masked, readonly   []string
		wantMask, wantRead []string
	}{
		{name: "defaults", wantMask: DefaultMaskedPaths(), wantRead: DefaultReadonlyPaths},
		{name: "empty replaces", masked: []string{}, readonly: []string{}, wantMask: []string{}, wantRead: []string{}},
		{name: "given", masked: []string{"/proc/kcore"}, readonly: []string{"/proc/bus"}, wantMask: []string{"/proc/kcore"}, wantRead: []string{"/proc/bus"}},
		{name: "privileged", privileged: true},
		{name: "privileged given", privileged: true, masked: []string{"/proc/keys"}, wantMask: []string{"/proc/keys"}},
	} {
		o := baseOpts()
		o.Privileged, o.MaskedPaths, o.ReadonlyPaths = tc.privileged, tc.masked, tc.readonly
		s, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Linux.MaskedPaths, tc.wantMask) || !slices.Equal(s.Linux.ReadonlyPaths, tc.wantRead) {
			t.Errorf("%s: masked %v readonly %v, want %v %v", tc.name, s.Linux.MaskedPaths, s.Linux.ReadonlyPaths, tc.wantMask, tc.wantRead)
		}
	}
}

func TestDefaultMaskedPaths(t *testing.T) {
	a := DefaultMaskedPaths()
	if !slices.Contains(a, "/proc/kcore") || !slices.Contains(a, "/sys/firmware") {
		t.Errorf("default masked paths %v", a)
	}
	for _, p := range a {
		if strings.Contains(p, "thermal_throttle") && !strings.HasPrefix(p, "/sys/devices/system/cpu/cpu") {
			t.Errorf("thermal path %q", p)
		}
	}
	a[0] = "changed"
	if DefaultMaskedPaths()[0] == "changed" {
		t.Error("DefaultMaskedPaths hands out its own slice")
	}
	if len(possibleCPUs()) == 0 {
		t.Error("no possible CPU read from /sys/devices/system/cpu/possible")
	}
}

const chownProfile = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["chown","fchownat"],"action":"SCMP_ACT_ERRNO"}]}`

// A user's profile is used for --privileged too (moby#47499); otherwise
// --privileged is unconfined, and unconfined is unconfined.
func TestBuildSeccompModes(t *testing.T) {
	for _, tc := range []struct {
		privileged bool
		opt        string
		want       specs.LinuxSeccompAction // "" for no profile
	}{
		{false, "", specs.ActErrno},
		{true, "", ""},
		{false, "seccomp=" + chownProfile, specs.ActAllow},
		{true, "seccomp=" + chownProfile, specs.ActAllow},
		{false, "seccomp=unconfined", ""},
		{true, "seccomp=unconfined", ""},
		{false, "seccomp=builtin", specs.ActErrno},
		{true, "seccomp=builtin", specs.ActErrno},
		{false, "seccomp=", specs.ActErrno},
	} {
		o := baseOpts()
		o.Privileged = tc.privileged
		if tc.opt != "" {
			o.SecurityOpt = []string{tc.opt}
		}
		s, err := Build(o)
		if err != nil {
			t.Fatalf("privileged=%v %q: %v", tc.privileged, tc.opt, err)
		}
		var got specs.LinuxSeccompAction
		if s.Linux.Seccomp != nil {
			got = s.Linux.Seccomp.DefaultAction
		}
		if got != tc.want {
			t.Errorf("privileged=%v %q: default action %q, want %q", tc.privileged, tc.opt, got, tc.want)
		}
	}
}

func TestSecurityOptsDockerMessages(t *testing.T) {
	for opt, want := range map[string]string{
		"writeable-cgroups=true":  `invalid --security-opt 2: "writeable-cgroups=true"`,
		"writable-cgroups=potato": `invalid --security-opt 2: "writable-cgroups=potato"`,
		"no-new-privileges=maybe": `invalid --security-opt 2: "no-new-privileges=maybe"`,
		"bogus":                   `invalid --security-opt 1: "bogus"`,
	} {
		err := ValidateSecurityOpts([]string{opt})
		if err == nil || err.Error() != want || !errdefs.IsInvalidParameter(err) {
			t.Errorf("%q: %v, want %q (invalid parameter)", opt, err, want)
		}
	}
	for _, opt := range []string{"writable-cgroups", "writable-cgroups=1", "writable-cgroups=false", "no-new-privileges", "no-new-privileges:true", "label=disable", "disable", "seccomp=unconfined", "seccomp=builtin"} {
		if err := ValidateSecurityOpts([]string{opt}); err != nil {
			t.Errorf("%q: %v", opt, err)
		}
	}
}

func cgroupMount(t *testing.T, s *specs.Spec) specs.Mount {
	t.Helper()
	m := findMount(s, "/sys/fs/cgroup")
	if m == nil {
		t.Fatal("no cgroup mount")
	}
	return *m
}

// The cgroup mount is writable for --privileged or writable-cgroups, and
// only then does the spec ask the exec driver for the payload's
// controllers (CgroupsAnnotation); a user's annotation cannot.
func TestBuildWritableCgroups(t *testing.T) {
	for _, tc := range []struct {
		privileged bool
		opt        string
		want       bool
	}{
		{false, "", false},
		{true, "", true},
		{false, "writable-cgroups", true},
		{false, "writable-cgroups=true", true},
		{false, "writable-cgroups=false", false},
		{true, "writable-cgroups=false", false},
	} {
		o := baseOpts()
		o.Privileged = tc.privileged
		o.Annotations = map[string]string{CgroupsAnnotation: CgroupsWritable}
		if tc.opt != "" {
			o.SecurityOpt = []string{tc.opt}
		}
		s, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		m := cgroupMount(t, s)
		if ro := slices.Contains(m.Options, "ro"); ro == tc.want {
			t.Errorf("privileged=%v %q: cgroup mount options %v, want writable=%v", tc.privileged, tc.opt, m.Options, tc.want)
		}
		if got := s.Annotations[CgroupsAnnotation] == CgroupsWritable; got != tc.want {
			t.Errorf("privileged=%v %q: annotation %v, want %v", tc.privileged, tc.opt, got, tc.want)
		}
	}
	// A user's own mount at /sys/fs/cgroup is theirs.
	o := baseOpts()
	o.SecurityOpt = []string{"writable-cgroups"}
	o.Mounts = []specs.Mount{{Destination: "/sys/fs/cgroup", Type: "bind", Source: "/x", Options: []string{"rbind", "ro"}}}
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if m := cgroupMount(t, s); m.Type != "bind" || !slices.Contains(m.Options, "ro") {
		t.Errorf("user's /sys/fs/cgroup changed: %+v", m)
	}
}
