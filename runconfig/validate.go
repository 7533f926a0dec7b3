package runconfig

import (
	"fmt"
	"path"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/pkg/errdefs"
)

// validateUlimits refuses what the runtime would not apply: a name that is
// no rlimit (the shim would skip it), a soft limit above the hard one. The
// messages are those of Docker's CLI (go-units' ParseUlimit), which
// refuses the same values before sending them. -1 is "unlimited".
func validateUlimits(ul []*containertypes.Ulimit) error {
	for _, u := range ul {
		if u == nil {
			continue
		}
		// go-units knows every name Docker's CLI takes; "as" it leaves out
		// of the CLI, but Docker's daemon hands RLIMIT_AS to the runtime.
		if _, err := u.GetRlimit(); err != nil && u.Name != "as" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid ulimit type: %s", u.Name))
		}
		if u.Soft < -1 || u.Hard < -1 {
			return errdefs.InvalidParameter(fmt.Errorf("invalid ulimit %s: a limit is a number, or -1 for unlimited (soft %d, hard %d)", u.Name, u.Soft, u.Hard))
		}
		if u.Hard != -1 {
			if u.Soft == -1 {
				return errdefs.InvalidParameter(fmt.Errorf("ulimit soft limit must be less than or equal to hard limit: soft: -1 (unlimited), hard: %d", u.Hard))
			}
			if u.Soft > u.Hard {
				return errdefs.InvalidParameter(fmt.Errorf("ulimit soft limit must be less than or equal to hard limit: %d > %d", u.Soft, u.Hard))
			}
		}
	}
	return nil
}

// ValidDeviceMode reports whether mode is a device cgroup access: one to
// three of r (read), w (write) and m (mknod), each at most once.
func ValidDeviceMode(mode string) bool {
	if mode == "" || len(mode) > 3 {
		return false
	}
	seen := map[rune]bool{}
	for _, c := range mode {
		if (c != 'r' && c != 'w' && c != 'm') || seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}

// validateDevices checks the form of --device mappings; whether the host
// path is a device is the daemon's to check (it reads the host). An empty
// container path means the host path and empty permissions mean "rwm",
// as the CLI would have sent them.
func validateDevices(devs []containertypes.DeviceMapping) error {
	for _, d := range devs {
		spec := d.PathOnHost + ":" + d.PathInContainer + ":" + d.CgroupPermissions
		if d.PathOnHost == "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid device %s: no host path", spec))
		}
		if !path.IsAbs(d.PathOnHost) {
			return errdefs.InvalidParameter(fmt.Errorf("invalid device %s: %s is not an absolute path", spec, d.PathOnHost))
		}
		if d.PathInContainer != "" && !path.IsAbs(d.PathInContainer) {
			return errdefs.InvalidParameter(fmt.Errorf("invalid device %s: %s is not an absolute path", spec, d.PathInContainer))
		}
		if d.CgroupPermissions != "" && !ValidDeviceMode(d.CgroupPermissions) {
			return errdefs.InvalidParameter(fmt.Errorf("invalid device %s: bad mode specified: %s (use r, w and m)", spec, d.CgroupPermissions))
		}
	}
	return nil
}
