// Package daemon is the engine: it keeps the containers and images, and
// drives each container's life through the exec driver. The API server
// calls it through the interfaces in api/server/backend.
package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/distribution/reference"
	eventtypes "github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/daemon/events"
	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/native"
	"github.com/sdengine/engine/distribution"
	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/image/graphdriver"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/libnetwork/bridge"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/systemd"
	"github.com/sdengine/engine/volume"
)

// Daemon is one running engine.
type Daemon struct {
	cfg        *config.Config
	containers *container.Store
	images     *image.Store
	registry   *distribution.Service
	volumes    *volume.Store
	driver     execdriver.Driver
	// cgroupDriver is "systemd" or "cgroupfs", decided at start-up.
	cgroupDriver string
	machines     *machineRegistry
	machined     Machined
	// net is the network controller: the networks, the containers'
	// endpoints, the embedded DNS (libnetwork).
	net *libnetwork.Controller
	// bridge is the controller's default bridge (nil with --bridge
	// none), for the spec's host-gateway.
	bridge  *bridge.Bridge
	started time.Time
	events  *events.Events

	mu      sync.Mutex
	tasks   map[string]execdriver.Task  // running containers, by ID
	pending map[string][]*pendingAttach // attachers waiting for a start
	execs   map[string]*execConfig      // exec instances, by exec ID
	// healthMonitors holds each running container's health checks, by ID.
	healthMonitors sync.Map
	// notifiers holds each running container's notify socket, by ID.
	notifiers sync.Map
	closing   bool
}

// Option changes what New builds the daemon with.
type Option func(*Daemon)

// WithMachined gives the daemon its machined client, instead of one of
// the system bus.
func WithMachined(m Machined) Option { return func(d *Daemon) { d.machined = m } }

// WithExecDriver gives the daemon the exec driver it runs containers
// with, instead of the native one New builds (shim binary, cgroup driver,
// shim groups are then not used): tests run the daemon's core on
// daemon/execdriver/fakedriver, without root or processes.
func WithExecDriver(drv execdriver.Driver) Option { return func(d *Daemon) { d.driver = drv } }

// New opens the engine's state under cfg's paths, reconnects to the
// containers that kept running while no daemon was there, and finishes or
// undoes what a crashed daemon left half done (recovery.go).
func New(ctx context.Context, cfg *config.Config, shimBinary string, opts ...Option) (*Daemon, error) {
	for _, dir := range []string{cfg.Root, cfg.ExecRoot} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
	}
	gd, err := graphdriver.New(filepath.Join(cfg.Root, "graph"), cfg.StorageDriver)
	if err != nil {
		return nil, fmt.Errorf("storage driver: %w", err)
	}
	reserve, err := cfg.MinFreeSpaceReserve()
	if err != nil {
		return nil, err
	}
	images, err := image.New(filepath.Join(cfg.Root, "image"), gd)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	images.SetMinFreeSpace(reserve)
	// The registry reports pulls and pushes to the event log, made below.
	var d *Daemon
	registry, err := distribution.New(distribution.Config{InsecureRegistries: cfg.InsecureRegistries, Mirrors: cfg.RegistryMirrors,
		MirrorsFor:    cfg.RegistryMirrorsFor,
		AddRegistries: cfg.AddRegistries, BlockRegistries: cfg.BlockRegistries, CertsDir: cfg.RegistryCertsDir,
		Events: func(a eventtypes.Action, ref reference.Named) { d.refEvent(a, ref) }}, images)
	if err != nil {
		return nil, err
	}
	images.SetSearchList(registry.SearchList())
	containers, err := container.NewStore(filepath.Join(cfg.Root, "containers"))
	if err != nil {
		return nil, err
	}
	volumes, err := volume.New(filepath.Join(cfg.Root, "volumes"))
	if err != nil {
		return nil, fmt.Errorf("volume store: %w", err)
	}
	// The cgroup driver is decided once, here, and passed down.
	cgDriver, err := cgroupDriver(cfg.ExecOpts)
	if err != nil {
		return nil, err
	}
	if cfg.ShimGroupSize < 0 {
		return nil, errdefs.InvalidParameter(fmt.Errorf("shim-group-size must be 1 or more, not %d", cfg.ShimGroupSize))
	}
	d = &Daemon{
		cfg:          cfg,
		containers:   containers,
		images:       images,
		registry:     registry,
		volumes:      volumes,
		cgroupDriver: cgDriver,
		machines:     newMachineRegistry(),
		started:      time.Now(),
		events:       events.New(),
		tasks:        map[string]execdriver.Task{},
		pending:      map[string][]*pendingAttach{},
		execs:        map[string]*execConfig{},
	}
	if systemd.Booted() {
		d.machined = systemd.NewMachined()
	}
	for _, o := range opts {
		o(d)
	}
	if d.driver == nil {
		driver, err := native.New(cfg.ExecRoot, shimBinary, cgDriver == cgroupDriverSystemd)
		if err != nil {
			return nil, fmt.Errorf("exec driver: %w", err)
		}
		if cfg.ShimGroupSize > 0 {
			driver.SetShimGroupSize(cfg.ShimGroupSize)
		}
		d.driver = driver
	}
	images.SetEvents(d.imageEvent)
	if d.net, err = newNetworkController(cfg, d); err != nil {
		return nil, err
	}
	d.bridge = d.net.DefaultBridge()
	d.restoreVolumeRefs()
	cleanImageChecks(cfg.Root)
	d.recover(ctx)
	d.remountVolumes()
	d.restartOnBoot()
	slog.Info("daemon ready", "root", cfg.Root, "exec-root", cfg.ExecRoot, "storage-driver", gd.Name(),
		"containers", len(containers.List()), "images", len(images.List()), "min-free-space", reserve.String())
	return d, nil
}

// Shutdown ends the daemon. Without live-restore, running containers are
// stopped first, as Docker does; with it, they are left to their shims.
func (d *Daemon) Shutdown(ctx context.Context) {
	d.mu.Lock()
	d.closing = true
	ids := make([]string, 0, len(d.tasks))
	for id := range d.tasks {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	if d.cfg.LiveRestore {
		slog.Info("live-restore: leaving containers running", "count", len(ids))
		d.closeNotifiers()
		d.net.Close(len(ids) == 0)
		return
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		c, err := d.containers.Get(id)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.stop(ctx, c, "", nil); err != nil && !errdefs.IsNotModified(err) {
				slog.Error("stop on shutdown", "id", c.ID, "err", err)
			}
		}()
	}
	wg.Wait()
	// Nothing runs any more: the bridge, its table and namespaces go, so
	// that a stopped daemon leaves nothing of its network on the host.
	d.net.Close(true)
	d.machines.wait()
	if c, ok := d.machined.(io.Closer); ok {
		c.Close()
	}
}

func (d *Daemon) task(id string) execdriver.Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tasks[id]
}
