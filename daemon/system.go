package daemon

import (
	"context"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/api/types/system"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/api"
	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/logger"
	"github.com/sdengine/engine/volume"
)

// SystemVersion serves /version.
func (d *Daemon) SystemVersion(ctx context.Context) types.Version {
	v := types.Version{
		Platform:      struct{ Name string }{Name: "sdengine"},
		Version:       api.EngineVersion,
		APIVersion:    api.DefaultVersion,
		MinAPIVersion: api.MinVersion,
		GitCommit:     gitCommit(),
		GoVersion:     runtime.Version(),
		Os:            runtime.GOOS,
		Arch:          runtime.GOARCH,
		KernelVersion: kernelVersion(),
	}
	v.Components = []types.ComponentVersion{{
		Name:    "Engine",
		Version: v.Version,
		Details: map[string]string{
			"ApiVersion": v.APIVersion, "MinAPIVersion": v.MinAPIVersion, "GitCommit": v.GitCommit,
			"GoVersion": v.GoVersion, "Os": v.Os, "Arch": v.Arch, "KernelVersion": v.KernelVersion,
		},
	}}
	return v
}

// GitCommit is set at build time with -ldflags.
var GitCommit = "unknown"

func gitCommit() string { return GitCommit }

func kernelVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// SystemInfo serves /info.
func (d *Daemon) SystemInfo(ctx context.Context) (*backend.Info, error) {
	var running, stopped, paused int
	list := d.containers.List()
	for _, c := range list {
		c.Lock()
		switch c.State.Status {
		case container.StatusRunning:
			running++
		case container.StatusPaused:
			paused++
		default:
			stopped++
		}
		c.Unlock()
	}
	hostname, _ := os.Hostname()
	var si unix.Sysinfo_t
	_ = unix.Sysinfo(&si)
	cgroupVersion := "1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cgroupVersion = "2"
	}
	info := &backend.Info{InfoBase: system.Info{
		ID:                 hostname,
		Containers:         len(list),
		ContainersRunning:  running,
		ContainersPaused:   paused,
		ContainersStopped:  stopped,
		Images:             len(d.images.List()),
		Driver:             d.images.Driver().Name(),
		DriverStatus:       [][2]string{{"Backing Filesystem", d.graphBackingFilesystem()}},
		MemoryLimit:        true,
		SwapLimit:          true,
		CPUCfsPeriod:       true,
		CPUCfsQuota:        true,
		CPUShares:          true,
		PidsLimit:          true,
		IPv4Forwarding:     false,
		LoggingDriver:      d.cfg.LogDriver,
		CgroupDriver:       d.cgroupDriver,
		CgroupVersion:      cgroupVersion,
		NEventsListener:    d.events.Subscribers(),
		KernelVersion:      kernelVersion(),
		OperatingSystem:    operatingSystem(),
		OSType:             "linux",
		Architecture:       machineArch(),
		IndexServerAddress: "https://index.docker.io/v1/",
		NCPU:               runtime.NumCPU(),
		MemTotal:           int64(si.Totalram) * int64(si.Unit),
		DockerRootDir:      d.cfg.Root,
		Name:               hostname,
		ServerVersion:      api.EngineVersion,
		DefaultRuntime:     "runc",
		Runtimes:           map[string]system.RuntimeWithStatus{"runc": {}},
		LiveRestoreEnabled: d.cfg.LiveRestore,
		Isolation:          "",
		InitBinary:         "",
		SecurityOptions:    []string{"name=seccomp,profile=builtin"},
		Labels:             []string{},
		Warnings:           []string{},
		// No swarm mode here: the node is never part of a swarm, which
		// Docker reports as "inactive" (the CLI prints "Swarm: inactive").
		Swarm:      swarm.Info{LocalNodeState: swarm.LocalNodeStateInactive},
		SystemTime: time.Now().Format(time.RFC3339Nano),
	}}
	info.RegistryConfig = d.registry.ServiceConfig()
	info.NumberOfHooks = d.hookCount()
	info.Plugins.Log = logger.Names()
	// The drivers built in, as Docker lists its own: the local volume
	// driver; the bridge driver (user-defined networks and the default
	// bridge), host and null.
	info.Plugins.Volume = []string{volume.DefaultDriver}
	info.Plugins.Network = []string{"bridge", "host", "null"}
	return info, nil
}

func operatingSystem() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

func machineArch() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return runtime.GOARCH
	}
	return unix.ByteSliceToString(u.Machine[:])
}
