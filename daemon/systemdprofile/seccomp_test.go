package systemdprofile

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/daemon/oci"
)

// defaultProfile is the seccomp profile the daemon gives a container with
// these capability changes and no --security-opt seccomp=.
func defaultProfile(t *testing.T, capAdd, capDrop []string) *specs.LinuxSeccomp {
	t.Helper()
	s, err := oci.Build(oci.SpecOptions{
		ID: "abc", Hostname: "h", Rootfs: "/r", Args: []string{"/sbin/init"},
		NetworkMode: "none", CapAdd: capAdd, CapDrop: capDrop,
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Linux == nil || s.Linux.Seccomp == nil {
		t.Fatal("no default seccomp profile")
	}
	return s.Linux.Seccomp
}

// call is one system call as the filter sees it.
type call struct {
	name string
	args []uint64
}

func (c call) String() string {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = fmt.Sprintf("%#x", a)
	}
	return c.name + "(" + strings.Join(args, ", ") + ")"
}

// verdict is what p does with c: "allow", or "errno N". It reads the
// rules permissively: c is allowed if any rule naming it allows it with
// matching arguments, whatever other rules say. So "refused" here is
// refused by the real filter too.
func verdict(p *specs.LinuxSeccomp, c call) string {
	var errnoRule *specs.LinuxSyscall
	for i := range p.Syscalls {
		r := &p.Syscalls[i]
		if !slices.Contains(r.Names, c.name) || !argsMatch(r.Args, c.args) {
			continue
		}
		switch r.Action {
		case specs.ActAllow:
			return "allow"
		case specs.ActErrno:
			errnoRule = r
		}
	}
	if errnoRule != nil {
		return "errno " + errnoOf(errnoRule.ErrnoRet)
	}
	if p.DefaultAction == specs.ActErrno {
		return "errno " + errnoOf(p.DefaultErrnoRet)
	}
	return string(p.DefaultAction)
}

func errnoOf(ret *uint) string {
	if ret == nil {
		return unix.EPERM.Error()
	}
	return unix.Errno(*ret).Error()
}

func argsMatch(conds []specs.LinuxSeccompArg, args []uint64) bool {
	for _, a := range conds {
		var v uint64
		if int(a.Index) < len(args) {
			v = args[a.Index]
		}
		var ok bool
		switch a.Op {
		case specs.OpEqualTo:
			ok = v == a.Value
		case specs.OpNotEqual:
			ok = v != a.Value
		case specs.OpLessThan:
			ok = v < a.Value
		case specs.OpLessEqual:
			ok = v <= a.Value
		case specs.OpGreaterThan:
			ok = v > a.Value
		case specs.OpGreaterEqual:
			ok = v >= a.Value
		case specs.OpMaskedEqual:
			ok = v&a.Value == a.ValueTwo
		}
		if !ok {
			return false
		}
	}
	return true
}

const sigchld = uint64(unix.SIGCHLD)

// probes are the calls systemd makes (or that decide whether a process in
// the container can get a user namespace), amd64 argument order.
var probes = []call{
	{"unshare", []uint64{unix.CLONE_NEWUSER}},
	{"unshare", []uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS}},
	{"unshare", []uint64{unix.CLONE_NEWNS}},
	{"unshare", []uint64{unix.CLONE_NEWUTS}},
	{"unshare", []uint64{0}},
	{"clone", []uint64{unix.CLONE_NEWUSER | sigchld}},
	{"clone", []uint64{unix.CLONE_NEWNS | sigchld}},
	{"clone", []uint64{sigchld}},
	{"clone", []uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD}},
	{"clone3", []uint64{0, 88}},
	{"mount", nil},
	{"umount2", nil},
	{"reboot", []uint64{unix.LINUX_REBOOT_MAGIC1, unix.LINUX_REBOOT_MAGIC2, unix.LINUX_REBOOT_CMD_CAD_OFF}},
	{"name_to_handle_at", nil},
	{"setns", nil},
	{"keyctl", nil},
}

var capSets = []struct {
	name          string
	add, drop     []string
	userNSRefused bool
}{
	{"docker default caps", nil, nil, true},
	{"--cap-drop ALL", nil, []string{"ALL"}, true},
	{"--cap-add SYS_BOOT", []string{"SYS_BOOT"}, nil, true},
	// CAP_SYS_ADMIN opens namespaces in the default profile; its holder
	// can mount without a user namespace anyway.
	{"--cap-add SYS_ADMIN", []string{"SYS_ADMIN"}, nil, false},
}

// The measured set is empty: the profile a systemd container gets is the
// default profile, rule for rule, whatever the capabilities.
func TestAllowSyscallsAddsNothing(t *testing.T) {
	for _, cs := range capSets {
		plain := defaultProfile(t, cs.add, cs.drop)
		got := defaultProfile(t, cs.add, cs.drop)
		AllowSyscalls(got)
		if !reflect.DeepEqual(got, plain) {
			t.Errorf("%s: AllowSyscalls changed the default profile: %d rules, want %d", cs.name, len(got.Syscalls), len(plain.Syscalls))
		}
	}
	AllowSyscalls(nil) // unconfined: nothing to add to, no panic
}

// Whatever AllowSyscalls adds, a systemd container decides every probe as
// a plain container does, and cannot create a user namespace unless its
// capabilities already let the default profile allow it.
func TestAllowSyscallsRefusesUserNamespaces(t *testing.T) {
	for _, cs := range capSets {
		plain := defaultProfile(t, cs.add, cs.drop)
		sd := defaultProfile(t, cs.add, cs.drop)
		AllowSyscalls(sd)
		for _, c := range probes {
			if got, want := verdict(sd, c), verdict(plain, c); got != want {
				t.Errorf("%s: %s: systemd profile says %s, default profile %s", cs.name, c, got, want)
			}
		}
		if !cs.userNSRefused {
			continue
		}
		for _, c := range []call{
			{"unshare", []uint64{unix.CLONE_NEWUSER}},
			{"unshare", []uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS}},
			{"clone", []uint64{unix.CLONE_NEWUSER | sigchld}},
		} {
			if got := verdict(sd, c); got != "errno "+unix.EPERM.Error() {
				t.Errorf("%s: %s: %s, want EPERM", cs.name, c, got)
			}
		}
		// clone3 passes its flags in memory, out of the filter's sight: it
		// is refused outright (ENOSYS, so that libc falls back to clone).
		if got := verdict(sd, call{"clone3", []uint64{0, 88}}); got != "errno "+unix.ENOSYS.Error() {
			t.Errorf("%s: clone3: %s, want ENOSYS", cs.name, got)
		}
		// The calls the 2015 fork allowed outright stay refused (the kernel
		// would refuse them too without the capability), except
		// name_to_handle_at, which the default profile allows.
		for _, c := range []call{{"mount", nil}, {"umount2", nil}, {"unshare", []uint64{unix.CLONE_NEWNS}}} {
			if got := verdict(sd, c); got == "allow" {
				t.Errorf("%s: %s allowed", cs.name, c)
			}
		}
		if got := verdict(sd, call{"name_to_handle_at", nil}); got != "allow" {
			t.Errorf("%s: name_to_handle_at: %s", cs.name, got)
		}
		reboot := call{"reboot", []uint64{unix.LINUX_REBOOT_MAGIC1, unix.LINUX_REBOOT_MAGIC2, unix.LINUX_REBOOT_CMD_HALT}}
		if got, want := verdict(sd, reboot) == "allow", slices.Contains(cs.add, "SYS_BOOT"); got != want {
			t.Errorf("%s: reboot allowed=%v, want %v (allowed exactly with CAP_SYS_BOOT)", cs.name, got, want)
		}
	}
}

// The checker itself: it must see the default profile's refusals and its
// flag filter on clone, or the tests above prove nothing.
func TestVerdict(t *testing.T) {
	p := defaultProfile(t, nil, nil)
	eperm := "errno " + unix.EPERM.Error()
	for _, tc := range []struct {
		c    call
		want string
	}{
		{call{"read", nil}, "allow"},
		{call{"clone", []uint64{sigchld}}, "allow"},
		{call{"clone", []uint64{unix.CLONE_NEWNET | sigchld}}, eperm},
		{call{"mount", nil}, eperm},
		{call{"no_such_call", nil}, eperm},
	} {
		if got := verdict(p, tc.c); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.c, got, tc.want)
		}
	}
	admin := defaultProfile(t, []string{"SYS_ADMIN"}, nil)
	if got := verdict(admin, call{"unshare", []uint64{unix.CLONE_NEWUSER}}); got != "allow" {
		t.Errorf("CAP_SYS_ADMIN: unshare(CLONE_NEWUSER): %s", got)
	}
}
