// Package hooks runs third-party executables from a hooks.d directory
// around a container's life: each as `HOOK prestart CONFIG_PATH` before the
// container's process starts and as `HOOK poststop CONFIG_PATH` after it
// stopped (in reverse order), with the OCI state JSON on stdin and
// `container=docker` as the only environment variable.
//
// libcontainer stops at the first failing OCI hook and knows nothing of
// per-hook timeouts or names, so the daemon does not hand it the hooks
// themselves: it adds one OCI hook per phase, the daemon binary
// re-executed as `dockerd __hooks PHASE CONFIG_PATH LOGFILE HOOK...`
// (see Main), which runs the hooks with this package's contract.
package hooks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Command is os.Args[1] of the wrapper process; main hands over to Main.
const Command = "__hooks"

// The phases a hook is run for; the phase is the hook's first argument.
const (
	Prestart = "prestart"
	Poststop = "poststop"
)

// Per-hook time limits. A prestart hook holds up `docker run`; a poststop
// hook holds up the container's clean-up, so it gets less.
const (
	DefaultPrestartTimeout = 30 * time.Second
	DefaultPoststopTimeout = 10 * time.Second
)

// Dir returns the first of dirs that exists and is a directory, or "".
func Dir(dirs []string) string {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return ""
}

// Discover returns the absolute paths of the hooks in the first existing
// directory of dirs, in lexical order of their names. A hook is an entry
// that is, or is a symlink to, a regular file with an execute bit (package
// managers and alternatives install hooks as symlinks). Directories,
// non-executables, dangling symlinks and dot-files (editors' swap and
// backup files) are not hooks. No directory at all means no hooks.
func Discover(dirs []string) ([]string, error) {
	dir := Dir(dirs)
	if dir == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("hooks directory %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs) // sorted by name
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // removed between Stat and ReadDir
		}
		return nil, fmt.Errorf("reading hooks directory: %w", err)
	}
	var hooks []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(abs, e.Name())
		fi, err := os.Stat(p) // follows symlinks
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		hooks = append(hooks, p)
	}
	return hooks, nil
}

// Timeout is the per-hook limit for phase.
func Timeout(phase string) time.Duration {
	if phase == Poststop {
		return DefaultPoststopTimeout
	}
	return DefaultPrestartTimeout
}
