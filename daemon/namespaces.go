package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
)

// hostShm is the host's shared memory filesystem, bound into a container
// that shares the host's IPC namespace (--ipc host), as in Docker.
const hostShm = "/dev/shm"

// shmPath is where a shareable container's /dev/shm lives on the host
// while it runs: a tmpfs of its own under the container's directory, which
// the containers that join its IPC namespace bind too.
func shmPath(containerRoot string) string {
	return filepath.Join(containerRoot, "mounts", "shm")
}

// validateNamespaceModes refuses at create the IPC and UTS modes Docker
// refuses (400). A container named by --ipc container:X need not exist
// yet: whether it runs and shares its IPC is decided at start, as Docker
// does. (PID modes: validatePidMode.)
func validateNamespaceModes(cfg *containertypes.Config, hc *containertypes.HostConfig) error {
	if !hc.IpcMode.Valid() {
		return errdefs.InvalidParameter(fmt.Errorf("invalid IPC mode: %v", hc.IpcMode))
	}
	if hc.IpcMode.IsContainer() && hc.IpcMode.Container() == "" {
		return errdefs.InvalidParameter(fmt.Errorf("invalid IPC mode: %v: no container named", hc.IpcMode))
	}
	if !hc.UTSMode.Valid() {
		return errdefs.InvalidParameter(fmt.Errorf("invalid UTS mode: %v", hc.UTSMode))
	}
	if hc.UTSMode.IsHost() && cfg.Hostname != "" {
		return errdefs.InvalidParameter(errors.New("conflicting options: hostname and the UTS mode"))
	}
	// The domain name is set in the container's own UTS namespace: with
	// the host's there is none to set it in (the runtime would refuse it
	// only at start).
	if hc.UTSMode.IsHost() && cfg.Domainname != "" {
		return errdefs.InvalidParameter(errors.New("conflicting options: domainname and the UTS mode"))
	}
	if hc.ShmSize < 0 {
		return errdefs.InvalidParameter(fmt.Errorf("invalid ShmSize %d: SHM size can not be less than 0", hc.ShmSize))
	}
	return nil
}

// namespaceOptions sets the container's IPC, PID and UTS namespaces and its
// /dev/shm in o, from its modes. For a shareable container it mounts the
// /dev/shm tmpfs on the host (released by releaseShm). The caller holds
// c's lock.
func (d *Daemon) namespaceOptions(c *container.Container, o *oci.SpecOptions) error {
	hc := c.HostConfig
	switch ipc := hc.IpcMode; {
	case ipc.IsEmpty(), ipc.IsPrivate():
		// A namespace and a /dev/shm of its own: the spec's default.
	case ipc.IsNone():
		o.NoShm = true
	case ipc.IsHost():
		if st, err := os.Stat(hostShm); err != nil || !st.IsDir() {
			return fmt.Errorf("--ipc host: the host has no %s to share: %v", hostShm, err)
		}
		o.IPC.Host = true
		o.ShmSource = hostShm
	case ipc.IsShareable():
		p, err := mountShm(c.Root, shmSize(hc))
		if err != nil {
			return err
		}
		o.ShmSource = p
	case ipc.IsContainer():
		share, shm, err := d.ipcOf(c, ipc.Container())
		if err != nil {
			return err
		}
		o.IPC, o.ShmSource = share, shm
	default:
		return errdefs.InvalidParameter(fmt.Errorf("invalid IPC mode: %v", ipc))
	}
	switch pid := hc.PidMode; {
	case pid.IsHost():
		o.PID.Host = true
	case pid.IsContainer():
		p, err := d.pidNamespaceOf(c, pid.Container())
		if err != nil {
			return err
		}
		o.PID.Path = p
	}
	o.UTS.Host = hc.UTSMode.IsHost()
	return nil
}

// shmSize is the size of the container's /dev/shm: HostConfig.ShmSize, or
// Docker's default for a record made before create filled it in.
func shmSize(hc *containertypes.HostConfig) int64 {
	if hc.ShmSize > 0 {
		return hc.ShmSize
	}
	return oci.DefaultShmSize
}

// donorState is what a start needs to know of a container whose
// namespaces it joins.
type donorState struct {
	ID      string
	Running bool
	Pid     int
	IpcMode containertypes.IpcMode
	Root    string
	// The network: its mode and, on the bridge, its namespace's path.
	NetworkMode containertypes.NetworkMode
	SandboxKey  string
}

// lockWait is how long a start waits for another container's lock.
const lockWait = 10 * time.Second

// peek reads another container's state under its lock. The caller holds
// its own container's lock, so it only tries the other's: two containers
// starting at once and naming each other must not deadlock (neither runs,
// so both fail).
func peek(self, other *container.Container) (donorState, error) {
	if other == self {
		return donorState{}, errdefs.InvalidParameter(fmt.Errorf("container %s cannot join its own namespaces", self.ID))
	}
	deadline := time.Now().Add(lockWait)
	for !other.TryLock() {
		if time.Now().After(deadline) {
			return donorState{}, errdefs.Conflict(fmt.Errorf("container %s is busy (being started, stopped or removed); try again", other.ID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer other.Unlock()
	return donorState{
		ID:          other.ID,
		Running:     other.State.Running() && other.State.Pid > 0,
		Pid:         other.State.Pid,
		IpcMode:     other.HostConfig.IpcMode,
		Root:        other.Root,
		NetworkMode: other.HostConfig.NetworkMode,
		SandboxKey:  sandboxKey(other),
	}, nil
}

// nsFile is the file of a process's namespace of one kind, which the
// runtime joins.
func nsFile(pid int, kind string) string {
	return filepath.Join("/proc", strconv.Itoa(pid), "ns", kind)
}

// pidNamespaceOf is the PID namespace of the running container ref
// (--pid container:ref). As in Docker, one that is not running is a
// failure of the start (500), not of the create.
func (d *Daemon) pidNamespaceOf(c *container.Container, ref string) (string, error) {
	other, err := d.containers.Get(ref)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return "", errdefs.InvalidParameter(fmt.Errorf("failed to join PID namespace: %w", err))
		}
		return "", err
	}
	st, err := peek(c, other)
	if err != nil {
		return "", err
	}
	if !st.Running {
		return "", fmt.Errorf("failed to join PID namespace: container %s is not running", st.ID)
	}
	return nsFile(st.Pid, "pid"), nil
}

// ipcOf is the IPC namespace and /dev/shm of the running container ref
// (--ipc container:ref): the namespace of its process, and the /dev/shm
// it shares. Only a container that shares its IPC can be joined: one
// whose mode is shareable, or host (whose IPC is the host's), or
// container:Y, which shares Y's (followed to Y, which must still run for
// its /dev/shm to be there).
func (d *Daemon) ipcOf(c *container.Container, ref string) (oci.NamespaceShare, string, error) {
	var share oci.NamespaceShare
	for hops := 0; hops < 8; hops++ {
		other, err := d.containers.Get(ref)
		if err != nil {
			if errdefs.IsNotFound(err) {
				return share, "", errdefs.InvalidParameter(fmt.Errorf("failed to join IPC namespace: %w", err))
			}
			return share, "", err
		}
		st, err := peek(c, other)
		if err != nil {
			return share, "", err
		}
		if !st.Running {
			return share, "", errdefs.Conflict(fmt.Errorf("failed to join IPC namespace: container %s is not running", st.ID))
		}
		if share.Path == "" && !share.Host {
			// The first container named is the one whose namespace is
			// joined; any further one only holds the /dev/shm.
			share.Path = nsFile(st.Pid, "ipc")
		}
		switch mode := st.IpcMode; {
		case mode.IsShareable():
			p := shmPath(st.Root)
			if !isMountPoint(p) {
				return share, "", fmt.Errorf("failed to join IPC namespace: the shared /dev/shm of container %s is not mounted at %s", st.ID, p)
			}
			return share, p, nil
		case mode.IsHost():
			// Its namespace is the host's: say so rather than join it
			// through its process.
			return oci.NamespaceShare{Host: true}, hostShm, nil
		case mode.IsContainer():
			ref = mode.Container()
		default:
			return share, "", errdefs.InvalidParameter(fmt.Errorf("container %s: non-shareable IPC (its IPC mode is %q; create it with IpcMode \"shareable\" for other containers to join it)", st.ID, ipcModeName(mode)))
		}
	}
	return share, "", errdefs.InvalidParameter(fmt.Errorf("failed to join IPC namespace: too many containers in the chain of --ipc container: modes starting at %s", ref))
}

func ipcModeName(m containertypes.IpcMode) string {
	if m == "" {
		return string(containertypes.IPCModePrivate)
	}
	return string(m)
}

// mountShm mounts a shareable container's /dev/shm on the host: a tmpfs
// of the given size, world-writable and sticky as /dev/shm is, with no
// device, setuid or executable file usable from it. A mount left by an
// earlier run (a crash) is replaced: a new IPC namespace starts empty.
func mountShm(containerRoot string, size int64) (string, error) {
	p := shmPath(containerRoot)
	if err := unmountShm(containerRoot); err != nil {
		return "", err
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		return "", fmt.Errorf("create the shareable /dev/shm mount point: %w", err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount("shm", p, "tmpfs", flags, "mode=1777,size="+strconv.FormatInt(size, 10)); err != nil {
		return "", fmt.Errorf("mount the shareable /dev/shm at %s: %w", p, err)
	}
	return p, nil
}

// unmountShm unmounts a shareable container's /dev/shm from the host, if
// it is mounted (every layer of it: a crash may have left one under a
// newer one). The containers that joined it keep their own binds of it.
func unmountShm(containerRoot string) error {
	p := shmPath(containerRoot)
	for i := 0; i < 16; i++ {
		err := unix.Unmount(p, unix.MNT_DETACH)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil // not a mount point (any more), or no directory
		default:
			return fmt.Errorf("unmount the shareable /dev/shm at %s: %w", p, err)
		}
	}
	return fmt.Errorf("unmount the shareable /dev/shm at %s: still mounted", p)
}

// releaseShm is unmountShm for a container that no longer runs, logged
// rather than returned: nothing it is called from can do better.
func releaseShm(containerRoot string) {
	if err := unmountShm(containerRoot); err != nil {
		slog.Error("release shareable /dev/shm", "dir", containerRoot, "err", err)
	}
}

// isMountPoint reports whether p is the root of a mount: its device
// differs from its parent's, which holds for a tmpfs over a directory.
func isMountPoint(p string) bool {
	var st, parent unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return false
	}
	if err := unix.Lstat(filepath.Dir(p), &parent); err != nil {
		return false
	}
	return st.Dev != parent.Dev
}
