package daemon

import (
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"

	eventtypes "github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/daemon/oci"
)

// Reload is the daemon's part of a configuration reload (SIGHUP): the
// command applies what it owns (the log level, from debug and log-level)
// and hands the new settings here. Every other setting is read once at
// start; a change to one is logged and waits for a restart, as the
// settings Docker cannot reload do. The "reload" event tells subscribers
// the settings now in force, under Docker's attribute names.
func (d *Daemon) Reload(newCfg *config.Config) {
	d.mu.Lock()
	d.cfg.Debug, d.cfg.LogLevel = newCfg.Debug, newCfg.LogLevel
	cfg := *d.cfg
	d.mu.Unlock()
	for _, s := range []struct {
		key     string
		changed bool
	}{
		{"live-restore", newCfg.LiveRestore != cfg.LiveRestore},
		{"insecure-registries", !slices.Equal(newCfg.InsecureRegistries, cfg.InsecureRegistries)},
		{"registry-mirrors", !slices.Equal(newCfg.RegistryMirrors, cfg.RegistryMirrors)},
		{"registry-mirrors-for", !maps.EqualFunc(newCfg.RegistryMirrorsFor, cfg.RegistryMirrorsFor, slices.Equal)},
		{"log-driver", newCfg.LogDriver != cfg.LogDriver},
	} {
		if s.changed {
			slog.Warn("reload: this setting is read at start only; restart the daemon to apply it", "setting", s.key)
		}
	}
	hostname, _ := os.Hostname()
	attrs := reloadAttributes(&cfg, cgroupnsDefault())
	attrs["name"] = hostname
	// The actor is the daemon's ID, which info reports (the hostname).
	d.events.Log(eventtypes.ActionReload, eventtypes.DaemonEventType, eventtypes.Actor{ID: hostname, Attributes: attrs})
	slog.Info("configuration reloaded", "debug", cfg.Debug, "log-level", cfg.LogLevel)
}

// reloadAttributes are the "reload" event's attributes for cfg: Docker's
// keys, with the values this engine has (fixed ones where it has no
// setting: its download and upload concurrency, its shutdown timeout).
func reloadAttributes(cfg *config.Config, cgroupns string) map[string]string {
	return map[string]string{
		"debug":                    strconv.FormatBool(cfg.Debug),
		"labels":                   attributeSlice(nil),
		"max-concurrent-downloads": "3",
		"max-concurrent-uploads":   "5",
		"max-download-attempts":    "5",
		"shutdown-timeout":         "15",
		"insecure-registries":      attributeSlice(cfg.InsecureRegistries),
		"registry-mirrors":         attributeSlice(cfg.RegistryMirrors),
		"live-restore":             strconv.FormatBool(cfg.LiveRestore),
		"features":                 "map[]",
		"runtimes":                 "runc",
		"default-runtime":          "runc",
		"default-shm-size":         strconv.FormatInt(oci.DefaultShmSize, 10),
		"default-ipc-mode":         "private",
		"default-cgroupns-mode":    cgroupns,
	}
}

// attributeSlice is a list as Docker writes it in an attribute: JSON, and
// "[]" for none.
func attributeSlice(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// cgroupnsDefault is the cgroup namespace mode a container gets unless it
// asks: Docker's default, private on cgroup v2 and host on v1.
func cgroupnsDefault() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "private"
	}
	return "host"
}
