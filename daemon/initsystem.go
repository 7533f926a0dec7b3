package daemon

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"
	containertypes "github.com/docker/docker/api/types/container"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/daemon/systemdprofile"
)

// The systemd profile (brief 3.2): what a container booting systemd as
// PID 1 needs from the engine, without privileges.

const (
	initSystemd = "systemd"
	// systemdStopSignal halts systemd cleanly. SIGTERM only makes it
	// re-execute itself and SIGRTMIN+1 (the 2015 patch's 35) asks for rescue
	// mode, so either would end in SIGKILL.
	systemdStopSignal = "SIGRTMIN+3"
	// journalRoot is the host's persistent journal; used only if it exists.
	journalRoot = "/var/log/journal"
)

// initCommands are the commands that boot an init: a container running one
// gets the systemd profile without asking (unless the daemon says not to).
var initCommands = map[string]bool{
	"/sbin/init": true, "/usr/sbin/init": true, "/usr/lib/systemd/systemd": true,
	"/lib/systemd/systemd": true, "systemd": true,
}

// chooseInitSystem decides the profile at create time and sets what follows
// from it in the container's config, so that inspect shows it.
// userStopSignal is the stop signal the client asked for, if any.
func (d *Daemon) chooseInitSystem(requested string, cfg *containertypes.Config, path, userStopSignal string) string {
	initSystem := requested
	if initSystem == "" && d.cfg.AutoSystemdEnabled() && initCommands[path] {
		initSystem = initSystemd
	}
	if initSystem == initSystemd && userStopSignal == "" {
		cfg.StopSignal = systemdStopSignal
	}
	return initSystem
}

// containerUUID is the first 32 hex digits of the ID in UUID form; systemd
// makes it the machine ID (brief 3.1).
func containerUUID(id string) string {
	h := id[:32]
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// machineID is the container's machine ID: the first 32 hex digits.
func machineID(id string) string { return id[:32] }

// userMounts reports whether the user mounted something at dst or above
// it (a bind of /var covers /var/log/journal).
func userMounts(c *container.Container, dst string) bool {
	covers := func(m string) bool {
		m = path.Clean(m)
		return m == dst || strings.HasPrefix(dst, m+"/")
	}
	for _, b := range c.HostConfig.Binds {
		if parts := strings.Split(b, ":"); len(parts) >= 2 && covers(parts[1]) {
			return true
		}
	}
	for m := range c.HostConfig.Tmpfs {
		if covers(m) {
			return true
		}
	}
	return false
}

// applySystemdProfile adds the profile's mounts and environment to the
// spec options: /run and /run/lock as tmpfs seeded from the image, /tmp as
// tmpfs, a writable cgroup subtree (the container has its own cgroup
// namespace), /etc/machine-id, the host's journal directory, and
// container=docker for PID 1. The caller holds c's lock.
func (d *Daemon) applySystemdProfile(c *container.Container, rootfs string, o *oci.SpecOptions) error {
	tmpfs := func(dst, mode string, seed bool) specs.Mount {
		opts := []string{"nosuid", "nodev", "mode=" + mode, "size=65536k"}
		if seed {
			// libcontainer copies the image's content up into the tmpfs.
			opts = append(opts, "tmpcopyup")
		}
		return specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: opts}
	}
	if !userMounts(c, "/run") {
		o.Mounts = append(o.Mounts, tmpfs("/run", "755", true))
		if !userMounts(c, "/run/lock") {
			o.Mounts = append(o.Mounts, tmpfs("/run/lock", "755", true))
		}
	}
	if !userMounts(c, "/tmp") {
		o.Mounts = append(o.Mounts, tmpfs("/tmp", "1777", false))
	}
	o.Mounts = append(o.Mounts, specs.Mount{
		Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
		Options: []string{"nosuid", "noexec", "nodev", "relatime", "rw"},
	})
	if err := d.setMachineID(c, rootfs, o); err != nil {
		return err
	}
	if err := d.bindJournal(c, o); err != nil {
		return err
	}
	has := false
	for _, kv := range o.Env {
		if strings.HasPrefix(kv, "container=") {
			has = true
		}
	}
	if !has {
		o.Env = append(o.Env, "container=docker")
	}
	return nil
}

// setMachineID makes /etc/machine-id the container's ID: written into the
// writable layer (systemd's machine-id-commit then has nothing to do), or,
// on a read-only root, bound from a file the engine writes.
func (d *Daemon) setMachineID(c *container.Container, rootfs string, o *oci.SpecOptions) error {
	content := []byte(machineID(c.ID) + "\n")
	if c.HostConfig.ReadonlyRootfs {
		src := c.File("machine-id")
		if err := os.WriteFile(src, content, 0o444); err != nil {
			return fmt.Errorf("write machine-id: %w", err)
		}
		o.Mounts = append(o.Mounts, specs.Mount{Destination: "/etc/machine-id", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
		return nil
	}
	p, err := securejoin.SecureJoin(rootfs, "/etc/machine-id")
	if err != nil {
		return fmt.Errorf("machine-id path: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write machine-id: %w", err)
	}
	if err := os.WriteFile(p, content, 0o444); err != nil {
		return fmt.Errorf("write machine-id: %w", err)
	}
	return nil
}

// bindJournal shares /var/log/journal/<machine id> with the host, so that
// `journalctl -D` (and `journalctl -m`) on the host reads the container's
// journal. Only when the host keeps a persistent journal and the user did
// not mount over the path.
func (d *Daemon) bindJournal(c *container.Container, o *oci.SpecOptions) error {
	if fi, err := os.Stat(journalRoot); err != nil || !fi.IsDir() {
		return nil
	}
	if userMounts(c, "/var/log/journal") {
		return nil
	}
	dir := filepath.Join(journalRoot, machineID(c.ID))
	if err := os.MkdirAll(dir, 0o2755); err != nil {
		return fmt.Errorf("create journal dir: %w", err)
	}
	if fi, err := os.Stat(journalRoot); err == nil {
		// The group (systemd-journal) and setgid bit follow the parent.
		if st, ok := statOwner(fi); ok {
			_ = os.Chown(dir, 0, st)
		}
	}
	c.JournalDir = dir
	o.Mounts = append(o.Mounts, specs.Mount{Destination: dir, Type: "bind", Source: dir, Options: []string{"rbind", "rw"}})
	return nil
}

// removeJournal deletes the container's journal; called only by rm.
func removeJournal(c *container.Container) error {
	if c.JournalDir == "" || filepath.Dir(c.JournalDir) != journalRoot {
		return nil
	}
	if err := os.RemoveAll(c.JournalDir); err != nil {
		return fmt.Errorf("remove journal %s: %w", c.JournalDir, err)
	}
	return nil
}

// allowSystemdSyscalls adds systemd's seccomp allowances (measured: none,
// see systemdprofile.AllowSyscalls) to the daemon's default profile only:
// a profile the user chose with --security-opt seccomp= is used as written.
func allowSystemdSyscalls(c *container.Container, spec *specs.Spec) {
	if spec.Linux == nil || spec.Linux.Seccomp == nil || ownSeccompProfile(c.HostConfig.SecurityOpt) {
		return
	}
	systemdprofile.AllowSyscalls(spec.Linux.Seccomp)
}

// ownSeccompProfile reports whether the user chose the seccomp profile
// (seccomp=FILE or seccomp=unconfined, in the "=" or legacy ":" form).
func ownSeccompProfile(securityOpt []string) bool {
	for _, opt := range securityOpt {
		if strings.HasPrefix(opt, "seccomp=") || strings.HasPrefix(opt, "seccomp:") {
			return true
		}
	}
	return false
}

// statOwner returns the group of a file.
func statOwner(fi os.FileInfo) (gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Gid), true
}
