package systemdprofile

import (
	"os"
	"path"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ClosedRun returns the host directory a user bound at /run when others
// may not search it (no o+x, e.g. 0700 from mktemp -d), and its mode. A
// /run tmpfs is 0755; in a closed one the services that drop root cannot
// reach /run/systemd/notify, dbus-daemon (as messagebus) first: its
// READY=1 never comes, dbus.service and systemd-logind wait out their
// start timeouts and restart, and the boot never leaves "starting". The
// engine leaves the user's directory as it is and says so (docs/systemd.md,
// "Your mounts win").
func ClosedRun(mounts []specs.Mount) (src string, mode os.FileMode, closed bool) {
	i := slices.IndexFunc(mounts, func(m specs.Mount) bool {
		return path.Clean(m.Destination) == "/run" && (m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind"))
	})
	if i < 0 {
		return "", 0, false
	}
	fi, err := os.Stat(mounts[i].Source)
	if err != nil || !fi.IsDir() {
		return "", 0, false
	}
	return mounts[i].Source, fi.Mode().Perm(), fi.Mode().Perm()&0o001 == 0
}
