package daemon

import (
	containertypes "github.com/docker/docker/api/types/container"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/runconfig"
)

// imageConfigFromContainer is the image config a container's config
// commits to.
func imageConfigFromContainer(c *containertypes.Config) dockerspec.DockerOCIImageConfig {
	out := dockerspec.DockerOCIImageConfig{
		ImageConfig: ocispec.ImageConfig{
			User:       c.User,
			Env:        append([]string(nil), c.Env...),
			Entrypoint: append([]string(nil), c.Entrypoint...),
			Cmd:        append([]string(nil), c.Cmd...),
			WorkingDir: c.WorkingDir,
			StopSignal: c.StopSignal,
		},
	}
	if len(c.ExposedPorts) > 0 {
		out.ExposedPorts = map[string]struct{}{}
		for p := range c.ExposedPorts {
			out.ExposedPorts[string(p)] = struct{}{}
		}
	}
	if len(c.Volumes) > 0 {
		out.Volumes = map[string]struct{}{}
		for v := range c.Volumes {
			out.Volumes[v] = struct{}{}
		}
	}
	if len(c.Labels) > 0 {
		out.Labels = map[string]string{}
		for k, v := range c.Labels {
			out.Labels[k] = v
		}
	}
	out.OnBuild = append([]string(nil), c.OnBuild...)
	out.Shell = append([]string(nil), c.Shell...)
	if h := c.Healthcheck; h != nil {
		out.Healthcheck = &dockerspec.HealthcheckConfig{Test: h.Test, Interval: h.Interval, Timeout: h.Timeout,
			StartPeriod: h.StartPeriod, StartInterval: h.StartInterval, Retries: h.Retries}
	}
	return out
}

// mergeCommitConfig fills what the commit request left empty from the
// container's config, as Docker's commit does: the request wins field by
// field, environment variables merge by name, and a request that sets
// an Entrypoint does not inherit the container's Cmd.
func mergeCommitConfig(user *dockerspec.DockerOCIImageConfig, c dockerspec.DockerOCIImageConfig) {
	if user.User == "" {
		user.User = c.User
	}
	user.Env = runconfig.MergeEnv(c.Env, user.Env)
	if len(user.Env) == 0 {
		user.Env = nil
	}
	if len(user.Labels) == 0 {
		user.Labels = c.Labels
	} else {
		for k, v := range c.Labels {
			if _, ok := user.Labels[k]; !ok {
				user.Labels[k] = v
			}
		}
	}
	if len(user.Entrypoint) == 0 {
		if len(user.Cmd) == 0 {
			user.Cmd = c.Cmd
		}
		user.Entrypoint = c.Entrypoint
	}
	if user.ExposedPorts == nil {
		user.ExposedPorts = c.ExposedPorts
	} else {
		for p := range c.ExposedPorts {
			user.ExposedPorts[p] = struct{}{}
		}
	}
	if user.Volumes == nil {
		user.Volumes = c.Volumes
	} else {
		for v := range c.Volumes {
			user.Volumes[v] = struct{}{}
		}
	}
	if user.WorkingDir == "" {
		user.WorkingDir = c.WorkingDir
	}
	if user.StopSignal == "" {
		user.StopSignal = c.StopSignal
	}
	if len(user.OnBuild) == 0 {
		user.OnBuild = c.OnBuild
	}
	if user.Healthcheck == nil {
		user.Healthcheck = c.Healthcheck
	}
	if len(user.Shell) == 0 {
		user.Shell = c.Shell
	}
}
