package oci

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/docker/go-units"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

func baseOpts() SpecOptions {
	return SpecOptions{ID: "abc", Hostname: "h", Rootfs: "/r", Args: []string{"sh"}, NetworkMode: "none"}
}

func findMount(s *specs.Spec, dest string) *specs.Mount {
	for i := range s.Mounts {
		if s.Mounts[i].Destination == dest {
			return &s.Mounts[i]
		}
	}
	return nil
}

func hasNS(s *specs.Spec, t specs.LinuxNamespaceType) bool {
	for _, n := range s.Linux.Namespaces {
		if n.Type == t {
			return true
		}
	}
	return false
}

func TestBuildDefaults(t *testing.T) {
	s, err := Build(baseOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Process.Capabilities.Bounding, []string{
		"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
		"CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SYS_CHROOT",
		"CAP_MKNOD", "CAP_AUDIT_WRITE", "CAP_SETFCAP",
	}) {
		t.Errorf("caps %v", s.Process.Capabilities.Bounding)
	}
	if len(s.Process.Capabilities.Inheritable) != 0 {
		t.Errorf("inheritable caps %v", s.Process.Capabilities.Inheritable)
	}
	for _, ns := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace, specs.UTSNamespace, specs.IPCNamespace, specs.NetworkNamespace} {
		if !hasNS(s, ns) {
			t.Errorf("no %s namespace", ns)
		}
	}
	if !slices.Equal(s.Linux.MaskedPaths, DefaultMaskedPaths()) || !slices.Equal(s.Linux.ReadonlyPaths, DefaultReadonlyPaths) {
		t.Error("masked/readonly paths")
	}
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno {
		t.Error("no default seccomp profile")
	}
	if m := findMount(s, "/dev/shm"); m == nil || !slices.Contains(m.Options, "size=67108864") {
		t.Errorf("/dev/shm %+v", m)
	}
	if m := findMount(s, "/sys"); m == nil || !slices.Contains(m.Options, "ro") {
		t.Errorf("/sys %+v", m)
	}
	if m := findMount(s, "/dev/pts"); m == nil || !slices.Contains(m.Options, "newinstance") || !slices.Contains(m.Options, "gid=5") {
		t.Errorf("/dev/pts %+v", m)
	}
	if s.Linux.CgroupsPath != "/docker/abc/payload" || s.Linux.RootfsPropagation != "rprivate" || *s.Process.OOMScoreAdj != 0 {
		t.Errorf("cgroups path %q propagation %q", s.Linux.CgroupsPath, s.Linux.RootfsPropagation)
	}
	if d := s.Linux.Resources.Devices; len(d) != 1 || d[0].Allow || d[0].Access != "rwm" {
		t.Errorf("device rules %+v", d)
	}
	if s.Process.Env[0] != "PATH="+DefaultPath || s.Process.Cwd != "/" {
		t.Errorf("env %v cwd %q", s.Process.Env, s.Process.Cwd)
	}
}

func TestBuildPrivileged(t *testing.T) {
	o := baseOpts()
	o.Privileged = true
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Process.Capabilities.Effective) != len(allCapabilities) || s.Linux.Seccomp != nil {
		t.Error("privileged: caps or seccomp")
	}
	if len(s.Linux.MaskedPaths) != 0 || len(s.Linux.ReadonlyPaths) != 0 {
		t.Error("privileged: masked paths")
	}
	if m := findMount(s, "/sys"); slices.Contains(m.Options, "ro") {
		t.Error("privileged: /sys is ro")
	}
	found := false
	for _, d := range s.Linux.Devices {
		if d.Path == "/dev/null" {
			found = true
		}
	}
	if !found || !s.Linux.Resources.Devices[0].Allow {
		t.Error("privileged: host devices")
	}
}

func TestBuildOptions(t *testing.T) {
	o := baseOpts()
	pids := int64(10)
	o.CapAdd = []string{"net_admin", "CAP_SYS_TIME"}
	o.CapDrop = []string{"chown"}
	o.Memory, o.NanoCPUs, o.CPUShares, o.PidsLimit = 1<<20, 1.5e9, 512, &pids
	o.ShmSize = 1 << 20
	o.Ulimits = []*units.Ulimit{{Name: "nofile", Soft: 100, Hard: 200}}
	o.SecurityOpt = []string{"seccomp=unconfined", "no-new-privileges", "apparmor=foo"}
	o.NetworkMode = "host"
	o.CgroupParent = "custom"
	o.Tty = true
	o.Mounts = []specs.Mount{{Destination: "/dev/shm", Type: "bind", Source: "/x", Options: []string{"rbind"}}, {Destination: "/data/sub", Type: "bind", Source: "/y"}, {Destination: "/data", Type: "bind", Source: "/z"}}
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Process.Capabilities.Effective
	if !slices.Contains(c, "CAP_NET_ADMIN") || !slices.Contains(c, "CAP_SYS_TIME") || slices.Contains(c, "CAP_CHOWN") {
		t.Errorf("caps %v", c)
	}
	r := s.Linux.Resources
	if *r.Memory.Limit != 1<<20 || *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 || *r.CPU.Shares != 512 || *r.Pids.Limit != 10 {
		t.Errorf("resources %+v", r)
	}
	if swapLimitSupported() && *r.Memory.Swap != 2<<20 {
		t.Errorf("swap %d", *r.Memory.Swap)
	}
	if len(s.Process.Rlimits) != 1 || s.Process.Rlimits[0].Type != "RLIMIT_NOFILE" || s.Process.Rlimits[0].Hard != 200 {
		t.Errorf("rlimits %+v", s.Process.Rlimits)
	}
	if s.Linux.Seccomp != nil || !s.Process.NoNewPrivileges {
		t.Error("security opts")
	}
	if hasNS(s, specs.NetworkNamespace) {
		t.Error("host network has a netns")
	}
	if s.Linux.CgroupsPath != "/custom/abc/payload" {
		t.Errorf("cgroups path %q", s.Linux.CgroupsPath)
	}
	if m := findMount(s, "/dev/shm"); m.Type != "bind" {
		t.Error("daemon mount did not override /dev/shm")
	}
	var order []string
	for _, m := range s.Mounts {
		order = append(order, m.Destination)
	}
	if slices.Index(order, "/data") > slices.Index(order, "/data/sub") {
		t.Errorf("mount order %v", order)
	}
	if !slices.Contains(s.Process.Env, "TERM=xterm") {
		t.Errorf("env %v", s.Process.Env)
	}
	// --cap-drop ALL --cap-add X leaves only X.
	o = baseOpts()
	o.CapDrop, o.CapAdd = []string{"ALL"}, []string{"KILL"}
	s, _ = Build(o)
	if !slices.Equal(s.Process.Capabilities.Effective, []string{"CAP_KILL"}) {
		t.Errorf("drop all: %v", s.Process.Capabilities.Effective)
	}
}

func TestBuildErrors(t *testing.T) {
	for name, mut := range map[string]func(*SpecOptions){
		"cap":      func(o *SpecOptions) { o.CapAdd = []string{"BOGUS"} },
		"secopt":   func(o *SpecOptions) { o.SecurityOpt = []string{"what=ever"} },
		"seccomp":  func(o *SpecOptions) { o.SecurityOpt = []string{"seccomp=/no/such/profile.json"} },
		"network":  func(o *SpecOptions) { o.NetworkMode = "mynet" },
		"cwd":      func(o *SpecOptions) { o.Cwd = "rel" },
		"args":     func(o *SpecOptions) { o.Args = nil },
		"ulimit":   func(o *SpecOptions) { o.Ulimits = []*units.Ulimit{{Name: "nofile", Soft: 2, Hard: 1}} },
		"nnp-bool": func(o *SpecOptions) { o.SecurityOpt = []string{"no-new-privileges=maybe"} },
	} {
		o := baseOpts()
		mut(&o)
		if _, err := Build(o); !errdefs.IsInvalidParameter(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBuildCustomSeccomp(t *testing.T) {
	o := baseOpts()
	o.SecurityOpt = []string{`seccomp={"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["chmod"],"action":"SCMP_ACT_ERRNO"}]}`}
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActAllow {
		t.Errorf("custom profile %+v", s.Linux.Seccomp)
	}
}

func TestResolveUser(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.MkdirAll(filepath.Join(root, "data"), 0o755)
	os.WriteFile(filepath.Join(root, "data/passwd"), []byte("root:x:0:0::/root:/bin/sh\nweb:x:33:34::/var/www:/bin/sh\n"), 0o644)
	// An absolute symlink must resolve inside the rootfs, not on the host.
	os.Symlink("/data/passwd", filepath.Join(root, "etc/passwd"))
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\nwww:x:34:\nstaff:x:50:web\n"), 0o644)

	cases := []struct {
		spec     string
		uid, gid uint32
		groups   []uint32
	}{
		{"", 0, 0, []uint32{0}},
		{"web", 33, 34, []uint32{34, 50}},
		{"33", 33, 34, []uint32{34, 50}},
		{"web:staff", 33, 50, []uint32{50}},
		{"1234", 1234, 0, []uint32{0}},
		{"1234:5678", 1234, 5678, []uint32{5678}},
	}
	for _, c := range cases {
		uid, gid, groups, err := ResolveUser(root, c.spec, nil)
		if err != nil || uid != c.uid || gid != c.gid || !slices.Equal(groups, c.groups) {
			t.Errorf("%q: %d %d %v %v", c.spec, uid, gid, groups, err)
		}
	}
	_, _, _, err := ResolveUser(root, "nobody", nil)
	if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), "unable to find user nobody: no matching entries in passwd file") {
		t.Errorf("unknown user: %v", err)
	}
	if _, _, _, err := ResolveUser(root, "web:nogroup", nil); !errdefs.IsInvalidParameter(err) {
		t.Errorf("unknown group: %v", err)
	}
	// No passwd file at all: numeric ids still work.
	empty := t.TempDir()
	if uid, gid, _, err := ResolveUser(empty, "5:6", nil); err != nil || uid != 5 || gid != 6 {
		t.Errorf("no passwd: %d %d %v", uid, gid, err)
	}
}

func BenchmarkBuild(b *testing.B) {
	o := baseOpts()
	for i := 0; i < b.N; i++ {
		if _, err := Build(o); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDefaultSeccompLeavesOutX32(t *testing.T) {
	s, err := Build(SpecOptions{ID: "x32test", Rootfs: "/", Args: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Linux.Seccomp == nil {
		t.Fatal("no seccomp profile")
	}
	for _, a := range s.Linux.Seccomp.Architectures {
		if a == specs.ArchX32 {
			t.Fatalf("x32 in %v", s.Linux.Seccomp.Architectures)
		}
	}
	if runtime.GOARCH == "amd64" && len(s.Linux.Seccomp.Architectures) != 2 {
		t.Fatalf("want x86_64 and x86, got %v", s.Linux.Seccomp.Architectures)
	}
}

// -1 is unlimited (RLIM_INFINITY), as with Docker's --ulimit.
func TestRlimitsUnlimited(t *testing.T) {
	rl, err := rlimits([]*units.Ulimit{{Name: "core", Soft: -1, Hard: -1}, {Name: "memlock", Soft: 64, Hard: -1}})
	if err != nil || len(rl) != 2 || rl[0].Soft != unix.RLIM_INFINITY || rl[0].Hard != unix.RLIM_INFINITY ||
		rl[1].Soft != 64 || rl[1].Hard != unix.RLIM_INFINITY || rl[1].Type != "RLIMIT_MEMLOCK" {
		t.Fatalf("%+v %v", rl, err)
	}
	for _, bad := range []*units.Ulimit{{Name: "core", Soft: -1, Hard: 5}, {Name: "core", Soft: -2, Hard: -2}} {
		if _, err := rlimits([]*units.Ulimit{bad}); !errdefs.IsInvalidParameter(err) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// The working directory is the first one set, the exec's before its
// container's, else "/"; Build applies the same default.
func TestWorkingDir(t *testing.T) {
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{nil, "/"},
		{[]string{""}, "/"},
		{[]string{"", ""}, "/"},
		{[]string{"/exec", "/ctr"}, "/exec"},
		{[]string{"", "/ctr"}, "/ctr"},
		{[]string{"/exec", ""}, "/exec"},
	} {
		if got := WorkingDir(tc.dirs...); got != tc.want {
			t.Errorf("WorkingDir(%q) = %q, want %q", tc.dirs, got, tc.want)
		}
	}
	s, err := Build(SpecOptions{ID: "abc", Rootfs: "/r", Args: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Process.Cwd != DefaultWorkingDir {
		t.Errorf("Build without a cwd: %q", s.Process.Cwd)
	}
	s, err = Build(SpecOptions{ID: "abc", Rootfs: "/r", Args: []string{"sh"}, Cwd: "/w"})
	if err != nil || s.Process.Cwd != "/w" {
		t.Errorf("Build with a cwd: %v %v", s, err)
	}
}
