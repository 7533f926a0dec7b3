package runconfig

import (
	"fmt"
	"path"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ValidateConfig checks a create request's Config as Docker's daemon does
// and normalises what Docker normalises: an env entry needs a name, the
// working directory must be absolute and is recorded cleaned ("/tmp/" is
// "/tmp"), and health-check durations are zero or at least
// containertypes.MinimumDuration. The messages are Docker's.
func ValidateConfig(c *containertypes.Config) error {
	if c == nil {
		return nil
	}
	if c.WorkingDir != "" {
		if !path.IsAbs(c.WorkingDir) {
			return errdefs.InvalidParameter(fmt.Errorf("the working directory '%s' is invalid, it needs to be an absolute path", c.WorkingDir))
		}
		c.WorkingDir = path.Clean(c.WorkingDir)
	}
	for _, kv := range c.Env {
		if name, _, _ := strings.Cut(kv, "="); name == "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid environment variable: %s", kv))
		}
	}
	return validateHealthcheck(c.Healthcheck)
}

func validateHealthcheck(h *containertypes.HealthConfig) error {
	if h == nil {
		return nil
	}
	tooShort := func(d time.Duration) bool { return d != 0 && d < containertypes.MinimumDuration }
	var err error
	switch {
	case tooShort(h.Interval):
		err = fmt.Errorf("Interval in Healthcheck cannot be less than %s", containertypes.MinimumDuration)
	case tooShort(h.Timeout):
		err = fmt.Errorf("Timeout in Healthcheck cannot be less than %s", containertypes.MinimumDuration)
	case h.Retries < 0:
		err = fmt.Errorf("Retries in Healthcheck cannot be negative")
	case tooShort(h.StartPeriod):
		err = fmt.Errorf("StartPeriod in Healthcheck cannot be less than %s", containertypes.MinimumDuration)
	case tooShort(h.StartInterval):
		err = fmt.Errorf("StartInterval in Healthcheck cannot be less than %s", containertypes.MinimumDuration)
	}
	if err != nil {
		return errdefs.InvalidParameter(err)
	}
	return nil
}

// ValidateTmpfs refuses tmpfs targets Docker refuses: relative ones and
// the root (however spelt: "//" is "/"). The messages are Docker's.
func ValidateTmpfs(tmpfs map[string]string) error {
	for dst := range tmpfs {
		if path.Clean(dst) == "/" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid specification: destination can't be '/'"))
		}
		if !path.IsAbs(dst) {
			return errdefs.InvalidParameter(fmt.Errorf("invalid mount path: '%s' mount path must be absolute", dst))
		}
	}
	return nil
}

// ValidateCgroupnsMode refuses a cgroup namespace mode Docker refuses (400,
// Docker's message), and "host", which this engine does not give: every
// container has a private cgroup namespace (501).
func ValidateCgroupnsMode(mode containertypes.CgroupnsMode) error {
	if !mode.Valid() {
		return errdefs.InvalidParameter(fmt.Errorf("invalid cgroup namespace mode: %v", mode))
	}
	if mode.IsHost() {
		return errdefs.NotImplemented(fmt.Errorf("cgroup namespace mode %q is not implemented by this engine: every container has a private cgroup namespace", mode))
	}
	return nil
}
