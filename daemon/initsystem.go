package daemon

import (
	"fmt"
	"log/slog"

	containertypes "github.com/docker/docker/api/types/container"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/daemon/systemdprofile"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/systemd"
	"github.com/sdengine/engine/runconfig/opts"
)

// chooseInitSystem decides the profile at create time and sets what follows
// from it in the container's config, so that inspect shows it.
// userStopSignal is the stop signal the client asked for, if any.
func (d *Daemon) chooseInitSystem(requested string, cfg *containertypes.Config, path, userStopSignal string) string {
	if requested == buildInitSystem {
		return "" // a build step: no profile, even for an init command
	}
	initSystem := requested
	if initSystem == "" && d.cfg.AutoSystemdEnabled() && systemdprofile.IsInitCommand(path) {
		initSystem = opts.InitSystemd
	}
	if initSystem == opts.InitSystemd && userStopSignal == "" {
		cfg.StopSignal = systemdprofile.StopSignal
	}
	return initSystem
}

// machineID is the container's one machine ID (pkg/systemd): its
// container_uuid, the user's or the engine's.
func machineID(c *container.Container) (string, error) {
	id, err := systemd.ContainerMachineID(c.ID, c.Config.Env)
	if err != nil {
		return "", errdefs.InvalidParameter(err)
	}
	return id, nil
}

// applySystemdProfile prepares the rootfs for systemd and applies the
// profile to the built spec. The caller holds c's lock.
func (d *Daemon) applySystemdProfile(c *container.Container, rootfs string, spec *specs.Spec) error {
	mid, err := machineID(c)
	if err != nil {
		return err
	}
	prep, err := systemdprofile.Prepare(systemdprofile.Rootfs{
		Path: rootfs, ReadOnly: c.HostConfig.ReadonlyRootfs, StateDir: c.Root, MachineID: mid,
	}, spec.Mounts)
	if err != nil {
		return err // the "systemd profile" spec step names it
	}
	c.JournalDir = prep.JournalDir
	if src, mode, closed := systemdprofile.ClosedRun(spec.Mounts); closed {
		slog.Warn("systemd profile: the directory bound at /run is not searchable by others: services that drop root (dbus-daemon) cannot notify systemd, and the boot may never finish; make it 0755",
			"id", c.ID, "source", src, "mode", fmt.Sprintf("%#o", mode))
	}
	systemdprofile.Apply(spec, systemdprofile.Options{
		Prepared: prep, DefaultSeccomp: oci.DefaultSeccomp(c.HostConfig.SecurityOpt), CapAdd: c.HostConfig.CapAdd,
	})
	return nil
}

// removeJournal deletes the container's journal; called only by rm.
func removeJournal(c *container.Container) error {
	return systemdprofile.RemoveJournal("", c.JournalDir)
}
