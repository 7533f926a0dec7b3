package daemon

import (
	"os"
	"strings"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/runconfig"
)

// process is what one process of a container runs as and in: its first
// process (the start's "process" spec step) or an exec's. Both are
// completed by processSpec, so that they agree on what they share.
type process struct {
	Args, Env      []string
	Cwd            string
	UID, GID       uint32
	AdditionalGids []uint32
	Tty            bool
}

// processSpec completes p, what one process of c asks for, into what it
// runs with: p.Env (an exec's -e) over the container's environment, whose
// $HOSTNAME is hostname; p.Cwd (an exec's -w), else the container's
// working directory, else the default. Args, the user and Tty are p's:
// the caller resolved the user in the rootfs. The caller holds c's lock.
func processSpec(c *container.Container, hostname string, p process) process {
	p.Env = runconfig.MergeEnv(containerEnv(c, hostname), p.Env)
	p.Cwd = oci.WorkingDir(p.Cwd, c.Config.WorkingDir)
	return p
}

// setProcess puts p in the options of the container's spec.
func setProcess(o *oci.SpecOptions, p process) {
	o.Args, o.Env, o.Cwd = p.Args, p.Env, p.Cwd
	o.UID, o.GID, o.AdditionalGids = p.UID, p.GID, p.AdditionalGids
	o.Tty = p.Tty
}

// imageGroups says whether a process gets the supplementary groups the
// image's /etc/group gives its user: not in a pod that asked for Strict
// supplemental groups (only its own and --group-add).
func imageGroups(c *container.Container) bool {
	return c.Pod == nil || !c.Pod.StrictGroups
}

// execHostname is the $HOSTNAME of an exec in the running c: the one its
// first process got at start. That is the container's own name, save with
// --network container:X, where the start copied the donor's name into the
// container's hostname file. The caller holds c's lock.
func execHostname(c *container.Container) string {
	if c.HostConfig != nil && c.HostConfig.NetworkMode.IsContainer() {
		if b, err := os.ReadFile(c.File("hostname")); err == nil {
			if h := strings.TrimSpace(string(b)); h != "" {
				return h
			}
		}
	}
	return c.Hostname()
}
