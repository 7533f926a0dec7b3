package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/internal/testenv"
	"github.com/sdengine/engine/pkg/errdefs"
)

// /dev/null is character device 1:3 on every Linux.
func isNull(d specs.LinuxDevice, path string) bool {
	return d.Path == path && d.Type == "c" && d.Major == 1 && d.Minor == 3 &&
		d.FileMode != nil && *d.FileMode == 0o666 && d.UID != nil && *d.UID == 0
}

func TestDevicesFromPath(t *testing.T) {
	devs, rules, err := DevicesFromPath(Device{PathOnHost: "/dev/null", PathInContainer: "/dev/xnull", CgroupPermissions: "rw"})
	if err != nil || len(devs) != 1 || !isNull(devs[0], "/dev/xnull") {
		t.Fatalf("/dev/null: %+v %v", devs, err)
	}
	if len(rules) != 1 || !rules[0].Allow || rules[0].Type != "c" || *rules[0].Major != 1 || *rules[0].Minor != 3 || rules[0].Access != "rw" {
		t.Fatalf("/dev/null rule: %+v", rules)
	}
	// Defaults: the host path, all permissions.
	devs, rules, err = DevicesFromPath(Device{PathOnHost: "/dev/null"})
	if err != nil || !isNull(devs[0], "/dev/null") || rules[0].Access != "rwm" {
		t.Fatalf("defaults: %+v %+v %v", devs, rules, err)
	}

	dir := t.TempDir()
	// A symlink to a device is followed.
	link := filepath.Join(dir, "link")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	if devs, _, err := DevicesFromPath(Device{PathOnHost: link, PathInContainer: "/dev/l"}); err != nil || !isNull(devs[0], "/dev/l") {
		t.Fatalf("symlink: %+v %v", devs, err)
	}

	// Refused as Docker refuses them.
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for host, want := range map[string]string{
		"/dev/nosuch":           `error gathering device information while adding custom device "/dev/nosuch": no such file or directory`,
		"/etc/passwd":           `error gathering device information while adding custom device "/etc/passwd": not a device node`,
		empty:                   `error gathering device information while adding custom device "` + empty + `": not a device node`,
		filepath.Join(dir, "x"): `error gathering device information while adding custom device "` + filepath.Join(dir, "x") + `": no such file or directory`,
	} {
		_, _, err := DevicesFromPath(Device{PathOnHost: host, PathInContainer: "/dev/x"})
		if err == nil || err.Error() != want || !errdefs.IsInvalidParameter(err) {
			t.Errorf("%s: got %v, want an invalid parameter %q", host, err, want)
		}
	}

	// A directory gives the devices below it, at their place below the
	// container path; what is not a device is left out.
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
	os.WriteFile(filepath.Join(tree, "file"), nil, 0o644)
	testenv.RequireRoot(t) // mknod
	for _, p := range []string{"a", "sub/b"} {
		if err := unix.Mknod(filepath.Join(tree, p), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(tree, p), 0o666) // past the umask
	}
	devs, rules, err = DevicesFromPath(Device{PathOnHost: tree, PathInContainer: "/dev/t", CgroupPermissions: "r"})
	if err != nil || len(devs) != 2 || !isNull(devs[0], "/dev/t/a") || !isNull(devs[1], "/dev/t/sub/b") || len(rules) != 2 || rules[1].Access != "r" {
		t.Fatalf("directory: %+v %+v %v", devs, rules, err)
	}
}

func TestBuildDevices(t *testing.T) {
	o := baseOpts()
	o.Devices = []Device{
		{PathOnHost: "/dev/null", PathInContainer: "/dev/xnull", CgroupPermissions: "rwm"},
		{PathOnHost: "/dev/zero", PathInContainer: "/dev/zero", CgroupPermissions: "r"},
	}
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Linux.Devices) != 2 || !isNull(s.Linux.Devices[0], "/dev/xnull") || s.Linux.Devices[1].Path != "/dev/zero" {
		t.Fatalf("devices %+v", s.Linux.Devices)
	}
	// Deny all first, then the user's devices (the runtime adds its
	// defaults after them).
	r := s.Linux.Resources.Devices
	if len(r) != 3 || r[0].Allow || r[0].Access != "rwm" || r[0].Major != nil ||
		!r[1].Allow || *r[1].Major != 1 || *r[1].Minor != 3 || r[1].Access != "rwm" ||
		!r[2].Allow || *r[2].Major != 1 || *r[2].Minor != 5 || r[2].Access != "r" {
		t.Fatalf("device cgroup %+v", r)
	}

	// A device that went away since create fails the start, as a 400.
	o.Devices = []Device{{PathOnHost: "/dev/nosuch", PathInContainer: "/dev/x", CgroupPermissions: "rwm"}}
	if _, err := Build(o); !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), "/dev/nosuch") {
		t.Fatalf("missing device: %v", err)
	}

	// Privileged: the host's devices, allowed; a mapping to another path
	// adds that node (with all permissions), one to the same path is the
	// host's own.
	o = baseOpts()
	o.Privileged = true
	o.Devices = []Device{
		{PathOnHost: "/dev/null", PathInContainer: "/dev/xnull", CgroupPermissions: "r"},
		{PathOnHost: "/dev/zero", PathInContainer: "/dev/zero", CgroupPermissions: "r"},
	}
	s, err = Build(o)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, d := range s.Linux.Devices {
		count[d.Path]++
	}
	if count["/dev/xnull"] != 1 || count["/dev/null"] != 1 || count["/dev/zero"] != 1 {
		t.Fatalf("privileged devices: %v", count)
	}
	if r := s.Linux.Resources.Devices; len(r) != 1 || !r[0].Allow || r[0].Access != "rwm" {
		t.Fatalf("privileged device cgroup %+v", r)
	}
}

func TestDeviceCgroupRules(t *testing.T) {
	for _, tc := range []struct {
		rule, want string // want: "" for a refusal
	}{
		{"c 1:3 rwm", "true c 1 3 rwm"},
		{"b *:* m", "true b * * m"},
		{"a 10:* r", "true a 10 * r"},
		{"c 1:3", ""},
		{"x 1:3 r", ""},
		{"c 1:3 rx", ""},
		{"c -1:3 r", ""},
		{" c 1:3 r", ""},
	} {
		got, err := ParseDeviceCgroupRule(tc.rule)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "invalid device cgroup rule format: '"+tc.rule+"'") {
				t.Errorf("%q: %v", tc.rule, err)
			}
			continue
		}
		n := func(p *int64) string {
			if p == nil {
				return "*"
			}
			return strconv.FormatInt(*p, 10)
		}
		if err != nil || fmt.Sprintf("%v %s %s %s %s", got.Allow, got.Type, n(got.Major), n(got.Minor), got.Access) != tc.want {
			t.Errorf("%q: %+v %v", tc.rule, got, err)
		}
	}
	o := baseOpts()
	o.DeviceCgroupRules = []string{"c 10:237 r"}
	s, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	rules := s.Linux.Resources.Devices
	last := rules[len(rules)-1]
	if rules[0].Allow || last.Type != "c" || *last.Major != 10 || *last.Minor != 237 || last.Access != "r" {
		t.Errorf("device rules %+v", rules)
	}
}
