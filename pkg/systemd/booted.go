package systemd

import "os"

// runtimeDir is what sd_booted() checks; a variable so tests can point it
// elsewhere.
var runtimeDir = "/run/systemd/system"

// Booted reports whether the host runs systemd as its init: systemd creates
// /run/systemd/system early at boot and nothing else does (sd_booted(3)).
func Booted() bool {
	fi, err := os.Stat(runtimeDir)
	return err == nil && fi.IsDir()
}
