package cri

import (
	"path/filepath"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Image volumes (Kubernetes ImageVolume): a CRI mount whose Image is set
// instead of a host path is the engine's image mount (--mount
// type=image), which is read-only whatever is asked; the CRI asks the
// runtime to refuse a writable one, so it is refused here.

// imageVolumeMount is a CRI image volume as the engine's image mount.
// The image is not pulled: the kubelet pulls it first, and gives its ID
// or a reference.
func imageVolumeMount(m *runtimeapi.Mount) (mount.Mount, error) {
	ref := m.GetImage().GetImage()
	if ref == "" {
		return mount.Mount{}, invalid("image volume %q: no image", m.ContainerPath)
	}
	if !filepath.IsAbs(m.ContainerPath) {
		return mount.Mount{}, invalid("image volume %q: the container path must be absolute", m.ContainerPath)
	}
	if !m.Readonly {
		return mount.Mount{}, invalid("image volume %q: image volumes are read-only: Readonly must be set", m.ContainerPath)
	}
	if len(m.UidMappings) > 0 || len(m.GidMappings) > 0 {
		return mount.Mount{}, unimplemented("image volume %q: ID-mapped mounts are not supported", m.ContainerPath)
	}
	im := mount.Mount{Type: mount.TypeImage, Source: ref, Target: m.ContainerPath, ReadOnly: true}
	if m.ImageSubPath != "" {
		im.ImageOptions = &mount.ImageOptions{Subpath: m.ImageSubPath}
	}
	return im, nil
}

// imageVolumeStatus is an image mount as ContainerStatus reports it: the
// image as given, and its ID as the ref (what PullImage answered), which
// the engine's inspect gives as the mount point's Name.
func imageVolumeStatus(m container.MountPoint, hc *container.HostConfig) *runtimeapi.Mount {
	out := &runtimeapi.Mount{
		ContainerPath: m.Destination, Readonly: true,
		Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE,
		Image:       &runtimeapi.ImageSpec{Image: m.Source, ImageRef: m.Name},
	}
	if hc != nil {
		for _, spec := range hc.Mounts {
			if spec.Type == mount.TypeImage && filepath.Clean(spec.Target) == m.Destination && spec.ImageOptions != nil {
				out.ImageSubPath = spec.ImageOptions.Subpath
			}
		}
	}
	return out
}
