package runconfig

import (
	"strings"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestValidateConfigEnv(t *testing.T) {
	for env, want := range map[string]string{
		"":     "invalid environment variable: ",
		"=":    "invalid environment variable: =",
		"=foo": "invalid environment variable: =foo",
	} {
		err := ValidateConfig(&containertypes.Config{Env: []string{"A=1", env}})
		if err == nil || err.Error() != want || !errdefs.IsInvalidParameter(err) {
			t.Errorf("env %q: got %v; want invalid parameter %q", env, err, want)
		}
	}
	for _, env := range []string{"A=", "A", "A=b=c"} {
		if err := ValidateConfig(&containertypes.Config{Env: []string{env}}); err != nil {
			t.Errorf("env %q: %v", env, err)
		}
	}
}

func TestValidateConfigWorkingDir(t *testing.T) {
	for in, want := range map[string]string{"": "", "/tmp/": "/tmp", "/a//b/../c": "/a/c", "/": "/"} {
		c := &containertypes.Config{WorkingDir: in}
		if err := ValidateConfig(c); err != nil || c.WorkingDir != want {
			t.Errorf("WorkingDir %q: got %q, %v; want %q", in, c.WorkingDir, err, want)
		}
	}
	err := ValidateConfig(&containertypes.Config{WorkingDir: "tmp"})
	if err == nil || !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), "it needs to be an absolute path") {
		t.Errorf("relative WorkingDir: %v", err)
	}
}

func TestValidateConfigHealthcheck(t *testing.T) {
	ok := containertypes.HealthConfig{Test: []string{"CMD", "true"}, Interval: time.Second, Timeout: time.Second, Retries: 3}
	cases := []struct {
		change func(*containertypes.HealthConfig)
		want   string
	}{
		{func(h *containertypes.HealthConfig) { h.Interval = -10 * time.Millisecond }, "Interval in Healthcheck cannot be less than 1ms"},
		{func(h *containertypes.HealthConfig) { h.Interval = 500 * time.Microsecond }, "Interval in Healthcheck cannot be less than 1ms"},
		{func(h *containertypes.HealthConfig) { h.Timeout = -100 * time.Millisecond }, "Timeout in Healthcheck cannot be less than 1ms"},
		{func(h *containertypes.HealthConfig) { h.Retries = -10 }, "Retries in Healthcheck cannot be negative"},
		{func(h *containertypes.HealthConfig) { h.StartPeriod = 100 * time.Microsecond }, "StartPeriod in Healthcheck cannot be less than 1ms"},
		{func(h *containertypes.HealthConfig) { h.StartInterval = 100 * time.Microsecond }, "StartInterval in Healthcheck cannot be less than 1ms"},
	}
	for _, c := range cases {
		h := ok
		c.change(&h)
		err := ValidateConfig(&containertypes.Config{Healthcheck: &h})
		if err == nil || err.Error() != c.want || !errdefs.IsInvalidParameter(err) {
			t.Errorf("got %v; want invalid parameter %q", err, c.want)
		}
	}
	for _, h := range []containertypes.HealthConfig{ok, {}, {Test: []string{"NONE"}}} {
		if err := ValidateConfig(&containertypes.Config{Healthcheck: &h}); err != nil {
			t.Errorf("%+v: %v", h, err)
		}
	}
}

func TestValidateTmpfs(t *testing.T) {
	for dst, want := range map[string]string{
		".":   "invalid mount path: '.' mount path must be absolute",
		"foo": "invalid mount path: 'foo' mount path must be absolute",
		"/":   "invalid specification: destination can't be '/'",
		"//":  "invalid specification: destination can't be '/'",
	} {
		err := ValidateTmpfs(map[string]string{"/ok": "", dst: "size=1m"})
		if err == nil || err.Error() != want || !errdefs.IsInvalidParameter(err) {
			t.Errorf("tmpfs %q: got %v; want invalid parameter %q", dst, err, want)
		}
	}
	if err := ValidateTmpfs(map[string]string{"/run": "", "/tmp/x/": "size=1m"}); err != nil {
		t.Error(err)
	}
}

func TestValidateCgroupnsMode(t *testing.T) {
	for mode, class := range map[containertypes.CgroupnsMode]errdefs.Class{
		"":        errdefs.ClassUnknown,
		"private": errdefs.ClassUnknown,
		"host":    errdefs.ClassNotImplemented,
		"invalid": errdefs.ClassInvalidParameter,
		"Private": errdefs.ClassInvalidParameter,
	} {
		err := ValidateCgroupnsMode(mode)
		if errdefs.ClassOf(err) != class || (class == errdefs.ClassUnknown) != (err == nil) {
			t.Errorf("%q: got %v; want class %v", mode, err, class)
		}
		if class == errdefs.ClassInvalidParameter && err.Error() != "invalid cgroup namespace mode: "+string(mode) {
			t.Errorf("%q: message %q", mode, err)
		}
	}
}
