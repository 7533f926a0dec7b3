// Package runconfig decodes and validates what a client asks a container to
// be, and merges it with what the image says.
package runconfig

import (
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/strslice"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// MergeImageConfig fills the container's config with the image's defaults,
// following Docker's rules: the user's values win; environment variables
// are merged by key; an Entrypoint given by the user drops the image's Cmd.
func MergeImageConfig(c *containertypes.Config, img ocispec.ImageConfig) {
	if c.User == "" {
		c.User = img.User
	}
	if c.WorkingDir == "" {
		c.WorkingDir = img.WorkingDir
	}
	if c.StopSignal == "" {
		c.StopSignal = img.StopSignal
	}
	c.Env = MergeEnv(img.Env, c.Env)
	if len(c.Labels) == 0 && len(img.Labels) > 0 {
		c.Labels = map[string]string{}
	}
	for k, v := range img.Labels {
		if _, set := c.Labels[k]; !set {
			c.Labels[k] = v
		}
	}
	if len(c.Entrypoint) == 0 {
		c.Entrypoint = strslice.StrSlice(img.Entrypoint)
		if len(c.Cmd) == 0 {
			c.Cmd = strslice.StrSlice(img.Cmd)
		}
	}
	// The image's volumes are added to the user's, as in Docker.
	if len(img.Volumes) > 0 {
		if c.Volumes == nil {
			c.Volumes = map[string]struct{}{}
		}
		for v := range img.Volumes {
			c.Volumes[v] = struct{}{}
		}
	}
}

// MergeEnv overlays env on base, key by key, keeping base's order.
func MergeEnv(base, env []string) []string {
	out := make([]string, 0, len(base)+len(env))
	index := map[string]int{}
	add := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := index[k]; ok {
			out[i] = kv
			return
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		add(kv)
	}
	for _, kv := range env {
		add(kv)
	}
	return out
}

// Command returns the process's path and arguments from Entrypoint + Cmd.
func Command(c *containertypes.Config) (string, []string) {
	argv := append(append([]string{}, c.Entrypoint...), c.Cmd...)
	if len(argv) == 0 {
		return "", nil
	}
	return argv[0], argv[1:]
}
