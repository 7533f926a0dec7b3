package daemon

import (
	"fmt"
	"os/exec"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
)

// `--init` alone keeps Docker's meaning: a small reaper runs as PID 1 and
// starts the command, so zombies are reaped and signals forwarded. It must
// be a static binary, since it runs inside any image.
const reaperPath = "/sbin/docker-init"

// reaperCandidates are looked up in PATH, in order: Docker's name, then
// Debian's and Fedora's static tini.
var reaperCandidates = []string{"docker-init", "tini-static"}

func findReaper() (string, error) {
	for _, name := range reaperCandidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errdefs.InvalidParameter(fmt.Errorf("--init needs a static init binary (docker-init or tini-static) in the daemon's PATH"))
}

// applyReaper binds the reaper in and makes it PID 1. The caller holds c's
// lock.
func applyReaper(c *container.Container, o *oci.SpecOptions) error {
	if c.HostConfig.Init == nil || !*c.HostConfig.Init || c.InitSystem != "" {
		return nil
	}
	bin, err := findReaper()
	if err != nil {
		return err
	}
	o.Mounts = append(o.Mounts, specs.Mount{Destination: reaperPath, Type: "bind", Source: bin, Options: []string{"rbind", "ro"}})
	o.Args = append([]string{reaperPath, "--"}, o.Args...)
	return nil
}
