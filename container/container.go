// Package container holds the Container model: its configuration, its
// state machine and its on-disk form. It knows nothing of how a container is
// run; the daemon drives the state transitions.
package container

import (
	"encoding/json"
	"fmt"
	"github.com/sdengine/engine/libnetwork"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/container/restartmanager"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/runconfig"
)

// RestartManager is the container's restart policy manager, made from the
// policy and count when first asked for. The caller holds the lock.
func (c *Container) RestartManager() *restartmanager.Manager {
	if c.restart == nil {
		c.restart = restartmanager.New(c.HostConfig.RestartPolicy, c.RestartCount)
	}
	return c.restart
}

// ResetRestartManager cancels what the current manager had pending and
// starts over (a start by the user); resetCount also zeroes RestartCount.
// The caller holds the lock.
func (c *Container) ResetRestartManager(resetCount bool) {
	if c.restart != nil {
		c.restart.Cancel()
	}
	c.restart = nil
	if resetCount {
		c.RestartCount = 0
	}
}

// configFile is the one file a container's whole record lives in, so that
// a crash can never leave its config and its state out of step.
const configFile = "config.v2.json"

// Container is one container as the daemon knows it.
type Container struct {
	mu     sync.Mutex
	notify notifiers
	// removing is set while a removal runs (Docker's RemovalInProgress):
	// a second removal and a start are refused meanwhile. It is not
	// guarded by mu, so that a second removal is answered at once rather
	// than after the first one released the lock. It is not persisted:
	// the removal's write-ahead mark on disk is State.Status "removing",
	// saved once the container stopped.
	removing atomic.Bool
	// rootfsHolds counts readers of the mounted rootfs outside a run (an
	// export): while there are any, an exit leaves the rootfs mounted and
	// a removal is refused. Atomic, paired with removing: a holder adds
	// itself before it checks removing, a removal marks itself before it
	// checks the holds, so one of the two always sees the other.
	rootfsHolds atomic.Int32

	ID         string
	Name       string // with the leading "/" as Docker keeps it
	Created    time.Time
	Path       string
	Args       []string
	Config     *containertypes.Config
	HostConfig *containertypes.HostConfig
	ImageID    string // "sha256:..."
	// InitSystem is the `Config.Init` extension: "systemd" boots an init.
	InitSystem string
	Driver     string
	// BaseFS is the mounted rootfs while the container runs; it stays
	// valid across daemon restarts (the mount outlives the daemon).
	BaseFS  string `json:",omitempty"`
	LogPath string
	// JournalDir is the host directory shared as the container's journal
	// (systemd profile); removed with the container.
	JournalDir string `json:",omitempty"`
	// NotifyDir is the host directory, bound read-only at /run/host, where
	// the daemon makes the container's notify socket (daemon/notify.go);
	// empty when it has none. A restarted daemon listens there again.
	NotifyDir string `json:",omitempty"`
	// Pod is the CRI pod sandbox the container belongs to, if any.
	Pod   *runconfig.Pod `json:",omitempty"`
	State State
	// Network is the container's endpoint on the default bridge while it
	// runs (its address, veth, namespace and published ports), so that a
	// restarted daemon knows what a running container holds.
	Network *libnetwork.Endpoint `json:",omitempty"`
	// Networks are its endpoints on further networks while it runs (a
	// container on two networks), by network name; Network is the first,
	// whose namespace they share.
	Networks map[string]*libnetwork.Endpoint `json:",omitempty"`
	// NetworkConfig is what was asked for each network the container joins
	// (create's EndpointsConfig, connect): aliases, a fixed address, a MAC
	// address, by network name. It outlives a stop.
	NetworkConfig map[string]*network.EndpointSettings `json:",omitempty"`
	// MountPoints are the container's binds, volumes and tmpfs mounts,
	// decided at create time (by destination order of creation).
	MountPoints []*MountPoint `json:",omitempty"`
	// Links are the container's legacy links (--link): alias → the linked
	// container's ID, so that renaming either container keeps them. They
	// are written with both the container's lock and the store's held
	// (Store.SetLinks), and may be read under either.
	Links map[string]string `json:",omitempty"`
	// LinkEnv is what the links gave the environment at the last start
	// (ALIAS_PORT_..., ALIAS_NAME, ALIAS_ENV_...): execs get it too.
	LinkEnv []string `json:",omitempty"`
	// LinkHosts are the /etc/hosts lines of the links, for this start.
	LinkHosts []string `json:"-"`

	// Root is the container's directory under the daemon's data root.
	Root string `json:"-"`
	// RestartCount counts the restarts the restart policy made since the
	// user last started the container.
	RestartCount int
	// HasBeenManuallyStopped is set by `docker stop` and cleared by a
	// start: an unless-stopped container the user stopped stays stopped
	// across a daemon restart.
	HasBeenManuallyStopped bool
	// restart applies the restart policy to this run's exits; not
	// persisted (a new daemon makes a new one from the policy and count).
	restart *restartmanager.Manager
	// ManualRestart is set (under the lock) while `docker restart` stops
	// and starts the container again: the exit it causes is not the end
	// of an auto-remove container (Docker's HasBeenManuallyRestarted).
	ManualRestart bool `json:"-"`
}

// New makes a container record in root (the containers directory).
func New(root, id, name string) *Container {
	return &Container{
		ID:      id,
		Name:    name,
		Created: time.Now().UTC(),
		Root:    filepath.Join(root, id),
		State:   State{Status: StatusCreated},
	}
}

// Lock and Unlock guard every field; callers hold the lock around reads that
// must be consistent (inspect) and around every transition.
func (c *Container) Lock()   { c.mu.Lock() }
func (c *Container) Unlock() { c.mu.Unlock() }

// TryLock takes the lock if it is free. A start that must read another
// container (whose namespaces it joins) while holding its own lock uses
// it, so that two containers joining each other cannot deadlock.
func (c *Container) TryLock() bool { return c.mu.TryLock() }

// SetRemovalInProgress marks a removal as running and reports whether one
// already was.
func (c *Container) SetRemovalInProgress() (already bool) { return c.removing.Swap(true) }

// HoldRootfs counts one more reader of the rootfs; it fails (and counts
// nothing) when a removal is in progress.
func (c *Container) HoldRootfs() bool {
	c.rootfsHolds.Add(1)
	if c.removing.Load() {
		c.rootfsHolds.Add(-1)
		return false
	}
	return true
}

// ReleaseRootfs drops a HoldRootfs and reports whether it was the last.
func (c *Container) ReleaseRootfs() (last bool) { return c.rootfsHolds.Add(-1) == 0 }

// RootfsHeld reports whether a reader holds the rootfs.
func (c *Container) RootfsHeld() bool { return c.rootfsHolds.Load() > 0 }

// ResetRemovalInProgress clears the mark once a removal ended (done or
// failed).
func (c *Container) ResetRemovalInProgress() { c.removing.Store(false) }

// RemovalInProgress reports whether a removal is running.
func (c *Container) RemovalInProgress() bool { return c.removing.Load() }

// Path of a file in the container's directory.
func (c *Container) File(name string) string { return filepath.Join(c.Root, name) }

// ShortID is the 12-character form used for hostnames and tables.
func (c *Container) ShortID() string { return c.ID[:12] }

// Hostname is the container's own name: its config's, else its short ID
// (Docker's default). The one place that default is written; a start may
// still give the process another (a network donor's, a pod's).
func (c *Container) Hostname() string {
	if c.Config != nil && c.Config.Hostname != "" {
		return c.Config.Hostname
	}
	return c.ShortID()
}

// SaveLocked writes the record atomically, reusing the blocks of a spare
// copy (atomicfile.WriteReserved), so that a state change such as an exit
// is recorded on a full disk too. The caller holds the lock.
func (c *Container) SaveLocked() error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode container %s: %w", c.ID, err)
	}
	return atomicfile.WriteReserved(c.File(configFile), data, 0o600)
}

// Save locks and writes the record.
func (c *Container) Save() error {
	c.Lock()
	defer c.Unlock()
	return c.SaveLocked()
}

// RecordFile is the path of the record of the container whose directory is
// dir.
func RecordFile(dir string) string { return filepath.Join(dir, configFile) }

// RemoveRecordLocked deletes the record: the container is gone for every later
// daemon, whatever its directory still holds. The caller holds the lock.
func (c *Container) RemoveRecordLocked() error {
	if err := os.Remove(c.File(configFile)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove container record: %w", err)
	}
	return nil
}

// Load reads the record of the container in dir; a missing record is an
// error that wraps os.ErrNotExist.
func Load(dir string) (*Container, error) {
	data, err := os.ReadFile(filepath.Join(dir, configFile))
	if err != nil {
		return nil, fmt.Errorf("read container record: %w", err)
	}
	c := &Container{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("corrupt container record %s: %w", filepath.Join(dir, configFile), err)
	}
	if c.ID == "" || c.ID != filepath.Base(dir) || c.Config == nil || c.HostConfig == nil {
		return nil, fmt.Errorf("corrupt container record %s: missing or mismatched fields", filepath.Join(dir, configFile))
	}
	c.Root = dir
	return c, nil
}
