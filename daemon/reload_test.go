package daemon

import (
	"testing"

	"github.com/sdengine/engine/daemon/config"
)

// The reload event carries Docker's attributes, with the settings in force.
func TestReloadAttributes(t *testing.T) {
	cfg := config.Default()
	cfg.Debug = true
	cfg.InsecureRegistries = []string{"reg.local:5000"}
	got := reloadAttributes(cfg, "private")
	for k, want := range map[string]string{
		"debug": "true", "labels": "[]", "insecure-registries": `["reg.local:5000"]`, "registry-mirrors": "[]",
		"live-restore": "false", "default-runtime": "runc", "default-shm-size": "67108864",
		"default-cgroupns-mode": "private", "max-concurrent-downloads": "3", "shutdown-timeout": "15",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}
