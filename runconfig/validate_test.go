package runconfig

import (
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestValidateUlimits(t *testing.T) {
	u := func(name string, soft, hard int64) containertypes.Resources {
		return containertypes.Resources{Ulimits: []*containertypes.Ulimit{{Name: name, Soft: soft, Hard: hard}}}
	}
	for _, tc := range []struct {
		name string
		r    containertypes.Resources
		want string // "" = valid
	}{
		{"nofile", u("nofile", 1024, 2048), ""},
		{"equal", u("nproc", 10, 10), ""},
		{"unlimited", u("core", -1, -1), ""},
		{"soft below unlimited hard", u("memlock", 100, -1), ""},
		{"as, which Docker's daemon takes", u("as", 1<<30, 1<<30), ""},
		{"every go-units name", containertypes.Resources{Ulimits: []*containertypes.Ulimit{
			{Name: "core"}, {Name: "cpu"}, {Name: "data"}, {Name: "fsize"}, {Name: "locks"}, {Name: "memlock"},
			{Name: "msgqueue"}, {Name: "nice"}, {Name: "nofile"}, {Name: "nproc"}, {Name: "rss"}, {Name: "rtprio"},
			{Name: "rttime"}, {Name: "sigpending"}, {Name: "stack"}}}, ""},
		{"unknown name", u("nosuch", 1, 1), "invalid ulimit type: nosuch"},
		{"upper case", u("NOFILE", 1, 1), "invalid ulimit type: NOFILE"},
		{"rlimit prefix", u("RLIMIT_NOFILE", 1, 1), "invalid ulimit type: RLIMIT_NOFILE"},
		{"empty name", u("", 1, 1), "invalid ulimit type: "},
		{"soft above hard", u("nofile", 20, 10), "ulimit soft limit must be less than or equal to hard limit: 20 > 10"},
		{"unlimited soft, limited hard", u("nofile", -1, 10), "ulimit soft limit must be less than or equal to hard limit: soft: -1 (unlimited), hard: 10"},
		{"below -1", u("nofile", -5, -5), "invalid ulimit nofile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateResources(&tc.r, Host{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errdefs.IsInvalidParameter(err) {
				t.Fatalf("want an invalid parameter containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestValidateDevices(t *testing.T) {
	dev := func(host, ctr, perms string) containertypes.Resources {
		return containertypes.Resources{Devices: []containertypes.DeviceMapping{{PathOnHost: host, PathInContainer: ctr, CgroupPermissions: perms}}}
	}
	for _, tc := range []struct {
		name string
		r    containertypes.Resources
		want string
	}{
		{"full", dev("/dev/null", "/dev/xnull", "rw"), ""},
		{"host path only", dev("/dev/null", "", ""), ""},
		{"mknod only", dev("/dev/null", "/dev/null", "m"), ""},
		{"any order", dev("/dev/null", "/dev/null", "mwr"), ""},
		// Whether the host path is a device is the daemon's to check.
		{"not a device here", dev("/etc/passwd", "/x", "r"), ""},
		{"no host path", dev("", "/dev/x", "rwm"), "no host path"},
		{"relative host path", dev("dev/null", "/dev/x", "rwm"), "dev/null is not an absolute path"},
		{"relative container path", dev("/dev/null", "x", "rwm"), "x is not an absolute path"},
		{"bad mode", dev("/dev/null", "/dev/x", "rwx"), "bad mode specified: rwx"},
		{"repeated mode", dev("/dev/null", "/dev/x", "rr"), "bad mode specified: rr"},
		{"long mode", dev("/dev/null", "/dev/x", "rwmr"), "bad mode specified: rwmr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateResources(&tc.r, Host{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errdefs.IsInvalidParameter(err) {
				t.Fatalf("want an invalid parameter containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestValidDeviceMode(t *testing.T) {
	for mode, want := range map[string]bool{
		"r": true, "w": true, "m": true, "rw": true, "rwm": true, "mrw": true, "wm": true,
		"": false, "x": false, "rr": false, "rwmm": false, "RWM": false, "r w": false,
	} {
		if got := ValidDeviceMode(mode); got != want {
			t.Errorf("ValidDeviceMode(%q) = %v, want %v", mode, got, want)
		}
	}
}
