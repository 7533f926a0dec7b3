package daemon

import (
	"context"
	"fmt"
	"os"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/pkg/namesgenerator"
	"github.com/docker/docker/pkg/stringid"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/signal"
	"github.com/sdengine/engine/pkg/systemd"
	"github.com/sdengine/engine/runconfig"
)

// ContainerCreate makes a container from an image: resolve the image, merge
// its config, check the request, reserve the name, make the writable layer.
func (d *Daemon) ContainerCreate(ctx context.Context, p backend.CreateParams) (containertypes.CreateResponse, error) {
	var resp containertypes.CreateResponse
	if p.Config.Image == "" {
		return resp, errdefs.InvalidParameter(fmt.Errorf("no image given: the container needs an image"))
	}
	img, err := d.images.Get(p.Config.Image)
	if err != nil {
		return resp, err
	}
	if err := checkImagePlatform(p.Config.Image, img.Config.Platform, p.Platform); err != nil {
		return resp, err
	}
	warnings, err := d.validateCreate(&p)
	if err != nil {
		return resp, err
	}

	cfg := *p.Config
	runconfig.MergeImageConfig(&cfg, img.Config.Config)
	mountPoints, err := d.planMounts(&cfg, p.HostConfig, p.ReadOnlyNonRecursive)
	if err != nil {
		return resp, err
	}
	mergeHealthcheck(&cfg, imageHealthcheck(img.RawConfig))
	path, args := runconfig.Command(&cfg)
	// As in Docker, only a command that is missing altogether is refused:
	// Cmd [""] is created (and fails at start, as it does in Docker).
	if len(cfg.Entrypoint) == 0 && len(cfg.Cmd) == 0 {
		return resp, errdefs.InvalidParameter(fmt.Errorf("no command specified"))
	}
	hc := p.HostConfig
	if hc.NetworkMode == "" {
		hc.NetworkMode = "default"
	}
	// Docker's default IPC mode; clients older than 1.40 are given
	// "shareable", the old default, by the API (as in Docker).
	if hc.IpcMode == "" {
		hc.IpcMode = containertypes.IPCModePrivate
	}
	// As in Docker, the record (and inspect) says the size /dev/shm gets.
	if hc.ShmSize == 0 {
		hc.ShmSize = oci.DefaultShmSize
	}
	if hc.LogConfig.Type == "" {
		hc.LogConfig.Type = d.cfg.LogDriver
		if len(hc.LogConfig.Config) == 0 {
			hc.LogConfig.Config = d.cfg.LogOpts
		}
	}
	if err := validateLogConfig(hc.LogConfig); err != nil {
		return resp, err
	}
	defaultConfinedPaths(hc)

	links, err := d.resolveLinks(hc)
	if err != nil {
		return resp, err
	}
	c, err := d.newContainer(p.Name)
	if err != nil {
		return resp, err
	}
	c.Lock()
	d.containers.SetLinks(c, links)
	c.Unlock()
	c.Path, c.Args = path, args
	c.Config = &cfg
	c.HostConfig = hc
	c.NetworkConfig = endpointsConfig(p.Networking)
	c.ImageID = img.ID.String()
	c.InitSystem = d.chooseInitSystem(p.InitSystem, c.Config, path, p.Config.StopSignal)
	c.Pod = p.Pod
	c.Driver = d.images.Driver().Name()
	if hc.LogConfig.Type == "json-file" {
		c.LogPath = c.File(c.ID + "-json.log")
	}
	// The order makes recovery obvious (daemon/recovery.go): the
	// directory first and the record last, so that whatever a crash
	// leaves of a create that did not complete is a directory without a
	// record, which the next daemon removes with the layer it names.
	if err := os.MkdirAll(c.Root, 0o710); err != nil {
		d.containers.Remove(c)
		return resp, fmt.Errorf("create container dir: %w", err)
	}
	crashpoint.Hit("create-after-dir")
	if err := d.images.CreateRWLayer(c.ID, img.ID); err != nil {
		d.containers.Remove(c)
		os.RemoveAll(c.Root)
		return resp, fmt.Errorf("create container layer: %w", err)
	}
	crashpoint.Hit("create-after-layer")
	if err := d.createVolumes(c.ID, mountPoints); err != nil {
		d.containers.Remove(c)
		d.images.RemoveRWLayer(c.ID)
		os.RemoveAll(c.Root)
		return resp, err
	}
	c.MountPoints = mountPoints
	if err := c.Save(); err != nil {
		d.releaseVolumes(c, true)
		d.containers.Remove(c)
		d.images.RemoveRWLayer(c.ID)
		os.RemoveAll(c.Root)
		return resp, err
	}
	crashpoint.Hit("create-after-record")
	d.containerEvent(c, eventtypes.ActionCreate, nil)
	resp.ID = c.ID
	resp.Warnings = warnings
	if resp.Warnings == nil {
		resp.Warnings = []string{}
	}
	return resp, nil
}

// newContainer reserves a new ID and name (a generated one if none given).
func (d *Daemon) newContainer(name string) (*container.Container, error) {
	id := stringid.GenerateRandomID()
	if name != "" {
		n, err := container.ValidateName(name)
		if err != nil {
			return nil, err
		}
		c := container.New(d.containers.Root(), id, n)
		return c, d.containers.Add(c)
	}
	for retry := 0; ; retry++ {
		c := container.New(d.containers.Root(), id, "/"+namesgenerator.GetRandomName(retry))
		if err := d.containers.Add(c); err == nil {
			return c, nil
		} else if retry > 10 {
			return nil, err
		}
	}
}

// validateRestartPolicy refuses a policy Docker refuses, and a policy
// with --rm (Docker's message).
func validateRestartPolicy(hc *containertypes.HostConfig) error {
	if err := containertypes.ValidateRestartPolicy(hc.RestartPolicy); err != nil {
		return errdefs.InvalidParameter(err)
	}
	if hc.AutoRemove && !hc.RestartPolicy.IsNone() {
		return errdefs.InvalidParameter(fmt.Errorf("can't create 'AutoRemove' container with restart policy"))
	}
	return nil
}

// validateCreate refuses what this engine cannot honour, so that a
// container is never created only to fail at start.
func (d *Daemon) validateCreate(p *backend.CreateParams) ([]string, error) {
	var warnings []string
	hc := p.HostConfig
	if err := runconfig.ValidateConfig(p.Config); err != nil {
		return nil, err
	}
	if err := runconfig.ValidateTmpfs(hc.Tmpfs); err != nil {
		return nil, err
	}
	if err := runconfig.ValidateCgroupnsMode(hc.CgroupnsMode); err != nil {
		return nil, err
	}
	for _, r := range hc.DeviceCgroupRules {
		if _, err := oci.ParseDeviceCgroupRule(r); err != nil {
			return nil, err
		}
	}
	if hc.OomScoreAdj < -1000 || hc.OomScoreAdj > 1000 {
		// Docker's message, word for word.
		return nil, errdefs.InvalidParameter(fmt.Errorf("Invalid value %d, range for oom score adj is [-1000, 1000]", hc.OomScoreAdj))
	}
	if err := runconfig.ValidateNamespaceModes(hc); err != nil {
		return nil, err
	}
	// Annotations are kept in the record and shown by inspect and list;
	// they are not given to the runtime, where the shim reads annotations
	// of its own (oci.ConsoleAnnotation), save the cgroup layout, which
	// the spec carries as the daemon's own (oci.CgroupLayoutAnnotation).
	if err := runconfig.ValidateAnnotations(hc.Annotations); err != nil {
		return nil, err
	}
	if err := oci.ValidateCgroupLayout(hc.Annotations); err != nil {
		return nil, err
	}
	switch p.InitSystem {
	case "", "systemd", buildInitSystem:
	default:
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid init system %q: the only init system is \"systemd\"", p.InitSystem))
	}
	if err := d.validateNetworking(p.Config, hc, p.Networking); err != nil {
		return nil, err
	}
	if err := d.validateLinks(hc); err != nil {
		return nil, err
	}
	if err := d.validatePidMode(hc.PidMode); err != nil {
		return nil, err
	}
	if err := validateNamespaceModes(p.Config, hc); err != nil {
		return nil, err
	}
	if err := runconfig.ValidateResources(&hc.Resources, runconfig.ProbeHost()); err != nil {
		return nil, err
	}
	if err := oci.ValidateCgroupParent(hc.CgroupParent, d.cgroupDriver == cgroupDriverSystemd); err != nil {
		return nil, err
	}
	if err := oci.ValidateSecurityOpts(hc.SecurityOpt); err != nil {
		return nil, err
	}
	for _, dev := range specDevices(hc) {
		if hc.Privileged && (dev.PathInContainer == "" || dev.PathInContainer == dev.PathOnHost) {
			continue // the container has the host's /dev already (as in Docker)
		}
		if _, _, err := oci.DevicesFromPath(dev); err != nil {
			return nil, err
		}
	}
	// Binds, mounts and --volumes-from are checked by planMounts.
	if hc.VolumeDriver != "" && hc.VolumeDriver != "local" {
		return nil, errdefs.NotFound(fmt.Errorf("error looking up volume plugin %s: plugin %q not found", hc.VolumeDriver, hc.VolumeDriver))
	}
	if hc.Init != nil && *hc.Init && p.InitSystem == "" {
		if _, err := findReaper(); err != nil {
			return nil, err
		}
	}
	if p.Config.StopSignal != "" {
		if _, err := signal.Parse(p.Config.StopSignal); err != nil {
			return nil, err
		}
	}
	// The machine ID comes from container_uuid when the user gives one:
	// refuse one systemd would not take before anything is created.
	for _, kv := range p.Config.Env {
		if v, ok := strings.CutPrefix(kv, systemd.ContainerUUIDVar+"="); ok {
			if _, err := systemd.ParseMachineID(v); err != nil {
				return nil, errdefs.InvalidParameter(err)
			}
		}
	}
	if err := validateRestartPolicy(hc); err != nil {
		return nil, err
	}
	w, err := d.validateUnitBind(p.Config.Labels)
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, w...)
	return warnings, nil
}

// validatePidMode refuses a PID mode Docker refuses (400): one that is
// not "", "host" or "container:X", and "container:X" of a missing X. X
// need not run: as in Docker, that is for the start to say.
func (d *Daemon) validatePidMode(mode containertypes.PidMode) error {
	if !mode.Valid() {
		return errdefs.InvalidParameter(fmt.Errorf("invalid PID mode: %v", mode))
	}
	if !mode.IsContainer() {
		return nil
	}
	if _, err := d.containers.Get(mode.Container()); err != nil {
		if errdefs.IsNotFound(err) {
			return errdefs.InvalidParameter(err)
		}
		return err
	}
	return nil
}

func validateLogConfig(lc containertypes.LogConfig) error {
	return logger.Validate(lc.Type, lc.Config)
}

// logPath is the file the container's log driver writes. The local
// driver's is not c.LogPath: Docker leaves that (inspect's LogPath) empty
// for it, so that its files are not an API.
func logPath(c *container.Container) string {
	if c.HostConfig.LogConfig.Type == "local" {
		return logger.LocalLogPath(c.Root)
	}
	return c.LogPath
}

// logInfo is what the container's log driver needs to know of it.
func logInfo(c *container.Container) logger.Info {
	return logger.Info{
		Driver:        c.HostConfig.LogConfig.Type,
		Config:        c.HostConfig.LogConfig.Config,
		LogPath:       logPath(c),
		ContainerID:   c.ID,
		ContainerName: strings.TrimPrefix(c.Name, "/"),
		ImageName:     c.Config.Image,
		ImageID:       c.ImageID,
		Labels:        c.Config.Labels,
		Env:           c.Config.Env,
		Created:       c.Created,
	}
}
