// Package config holds the daemon's settings: defaults, daemon.json, and
// the command line on top of both.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/sdengine/engine/pkg/fsreserve"
)

// Config is what the daemon is told to be. The JSON names are daemon.json's.
type Config struct {
	Hosts         []string          `json:"hosts,omitempty"`
	Root          string            `json:"data-root,omitempty"`
	ExecRoot      string            `json:"exec-root,omitempty"`
	Pidfile       string            `json:"pidfile,omitempty"`
	StorageDriver string            `json:"storage-driver,omitempty"`
	LogDriver     string            `json:"log-driver,omitempty"`
	LogOpts       map[string]string `json:"log-opts,omitempty"`
	Debug         bool              `json:"debug,omitempty"`
	LogLevel      string            `json:"log-level,omitempty"`
	LiveRestore   bool              `json:"live-restore,omitempty"`
	ExecOpts      []string          `json:"exec-opts,omitempty"`
	Group         string            `json:"group,omitempty"`
	HooksDirs     []string          `json:"hooks-dirs,omitempty"`
	// AutoSystemd gives images whose command is an init the systemd
	// profile without --init=systemd (docs/systemd.md). A pointer: unset means on.
	AutoSystemd *bool `json:"auto-systemd-init,omitempty"`
	// MinFreeSpace is the free space image import and load leave on the
	// data root's filesystem: a percentage of it or a size (pkg/fsreserve).
	MinFreeSpace string `json:"min-free-space,omitempty"`
}

// The default paths (README.md, "dockerd").
const (
	DefaultHost       = "unix:///var/run/docker.sock"
	DefaultRoot       = "/var/lib/docker"
	DefaultExecRoot   = "/var/run/docker"
	DefaultConfigFile = "/etc/docker/daemon.json"
	DefaultPidfile    = "/var/run/docker.pid"
	DefaultGroup      = "docker"
	DefaultLogDriver  = "json-file"
	// DefaultMinFreeSpace: why 5%, see fsreserve.Default.
	DefaultMinFreeSpace = fsreserve.Default
)

// DefaultHooksDirs are searched in order; the first that exists is used.
var DefaultHooksDirs = []string{"/usr/libexec/docker/hooks.d", "/usr/lib/docker/hooks.d"}

// Default returns a config with every default filled in.
func Default() *Config {
	return &Config{
		Root:      DefaultRoot,
		ExecRoot:  DefaultExecRoot,
		Pidfile:   DefaultPidfile,
		LogDriver: DefaultLogDriver,
		Group:     DefaultGroup,
		HooksDirs: append([]string{}, DefaultHooksDirs...),

		MinFreeSpace: DefaultMinFreeSpace,
	}
}

// LoadFile merges daemon.json at path into c. A missing file is fine when
// it is the default path; an unknown key or malformed JSON is an error, so
// a typo never goes unnoticed.
func (c *Config) LoadFile(path string, mustExist bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !mustExist {
			return nil
		}
		return fmt.Errorf("read daemon config: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("daemon config %s: %w", path, err)
	}
	return nil
}

// MinFreeSpaceReserve parses MinFreeSpace.
func (c *Config) MinFreeSpaceReserve() (fsreserve.Reserve, error) {
	return fsreserve.Parse(c.MinFreeSpace)
}

// AutoSystemdEnabled reports whether the automatic systemd profile is on.
func (c *Config) AutoSystemdEnabled() bool { return c.AutoSystemd == nil || *c.AutoSystemd }
