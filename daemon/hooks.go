package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/hooks"
)

// hooksLogFile, under the data root, is where hook failures are logged:
// hooks run in the shim, which may outlive the daemon and has no daemon
// log to write to.
const hooksLogFile = "hooks.log"

// daemonBinary is this dockerd, whose main serves hooks.Command. Not the
// exec driver's shim binary: that may be a separate, slimmer program.
var daemonBinary = sync.OnceValues(os.Executable)

// applyHooks adds the hooks.d executables to the container's spec as OCI
// prestart (createRuntime) and poststop hooks. The directory is read at
// every start, so hooks installed later count from the next start on; the
// poststop run uses the list this start saw.
func (d *Daemon) applyHooks(c *container.Container, spec *specs.Spec) error {
	list, err := hooks.Discover(d.cfg.HooksDirs)
	if err != nil {
		return fmt.Errorf("container %s: %w", c.ID, err)
	}
	if len(list) == 0 {
		return nil
	}
	self, err := daemonBinary()
	if err != nil {
		return fmt.Errorf("locating dockerd for the hooks wrapper: %w", err)
	}
	hooks.Apply(spec, hooks.Wrapper{
		Binary:     self,
		ConfigPath: d.driver.BundleConfig(c.ID),
		LogFile:    filepath.Join(d.cfg.Root, hooksLogFile),
	}, list)
	return nil
}

// hookCount is what `docker info` reports as the number of hooks: the
// daemon counts, as a remote client cannot see the daemon's disk.
func (d *Daemon) hookCount() int {
	list, err := hooks.Discover(d.cfg.HooksDirs)
	if err != nil {
		slog.Warn("counting hooks", "err", err)
	}
	return len(list)
}
