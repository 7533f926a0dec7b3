package unitbind

import (
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestValidateUnitName(t *testing.T) {
	for _, ok := range []string{
		"web.service", "docker-container@web.service", "a.scope", "multi-user.target",
		`system-getty\x2dx.slice`, "x:y_z.service", "foo@a.b.service",
		strings.Repeat("a", 247) + ".service",
	} {
		if err := ValidateUnitName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "web", "web.services", ".service", "web.", "foo@.service", "@x.service",
		"a b.service", "a/b.service", "a@b@c.service", "héllo.service", "a\x00.service",
		strings.Repeat("a", 248) + ".service",
	} {
		err := ValidateUnitName(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if !errdefs.IsInvalidParameter(err) {
			t.Errorf("%q: %v is not an InvalidParameter", bad, err)
		}
	}
}

func TestServiceFromCgroup(t *testing.T) {
	for _, tc := range []struct{ name, cg, want string }{
		{"v2", "0::/system.slice/docker-container@web.service\n", "docker-container@web.service"},
		{"hybrid", "12:pids:/system.slice/x.service\n1:name=systemd:/system.slice/web.service\n0::/system.slice/web.service\n", "web.service"},
		{"v1 only", "3:cpu,cpuacct:/\n1:name=systemd:/system.slice/web.service\n", "web.service"},
		{"v1, empty cgroup2", "1:name=systemd:/system.slice/web.service\n0::/\n", "web.service"},
		{"delegated subgroup", "0::/system.slice/ci.service/job/payload\n", "ci.service"},
		{"user service", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service\n", "foo.service"},
		{"session scope", "0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"root", "0::/\n", ""},
		{"no systemd", "", ""},
		{"an invalid name", "0::/system.slice/a b.service\n", ""},
	} {
		if got := ServiceFromCgroup(tc.cg); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The annotations must parse as libcontainer parses them (GVariant text,
// godbus) into the types systemd's properties have: BindsTo and Before
// "as", TimeoutStopSec a number libcontainer turns into microseconds.
func TestBindScopeProperties(t *testing.T) {
	unit := `docker-container@a\x2db.service`
	a := BindScopeProperties(unit, 10)
	for _, k := range []string{ScopeBindsToAnnotation, ScopeBeforeAnnotation} {
		v, err := dbus.ParseVariant(a[k], dbus.Signature{})
		if err != nil {
			t.Fatalf("%s=%s: %v", k, a[k], err)
		}
		if got, ok := v.Value().([]string); !ok || len(got) != 1 || got[0] != unit {
			t.Errorf("%s=%s parses as %s %v", k, a[k], v.Signature(), v.Value())
		}
	}
	v, err := dbus.ParseVariant(a[ScopeTimeoutStopAnnotation], dbus.Signature{})
	if err != nil || v.Value() != int32(10) {
		t.Errorf("%s=%s parses as %v (%v)", ScopeTimeoutStopAnnotation, a[ScopeTimeoutStopAnnotation], v, err)
	}
	if _, ok := BindScopeProperties(unit, -1)[ScopeTimeoutStopAnnotation]; ok {
		t.Error("TimeoutStopSec set for a stop timeout of -1")
	}
	// 0, SIGKILL at once, must not become systemd's 0 (no timeout).
	v, err = dbus.ParseVariant(BindScopeProperties(unit, 0)[ScopeTimeoutStopAnnotation], dbus.Signature{})
	if f, ok := v.Value().(float64); err != nil || !ok || f <= 0 || f > 0.01 {
		t.Errorf("stop timeout 0: %v (%v)", v, err)
	}
}
