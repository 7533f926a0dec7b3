package cri

import (
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImageVolumeMount(t *testing.T) {
	img := &runtimeapi.ImageSpec{Image: "sha256:" + "ab12"}
	m, err := bindMount(&runtimeapi.Mount{ContainerPath: "/mnt/iv", Readonly: true, Image: img, ImageSubPath: "etc"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != mount.TypeImage || m.Source != img.Image || m.Target != "/mnt/iv" || !m.ReadOnly || m.ImageOptions == nil || m.ImageOptions.Subpath != "etc" {
		t.Errorf("image volume as %+v", m)
	}
	for name, bad := range map[string]*runtimeapi.Mount{
		"writable":      {ContainerPath: "/mnt/iv", Image: img},
		"no image":      {ContainerPath: "/mnt/iv", Readonly: true, Image: &runtimeapi.ImageSpec{}},
		"relative path": {ContainerPath: "mnt", Readonly: true, Image: img},
	} {
		if _, err := bindMount(bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}

	st := imageVolumeStatus(container.MountPoint{Type: mount.TypeImage, Source: "busybox", Name: "sha256:ab12", Destination: "/mnt/iv"},
		&container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeImage, Source: "busybox", Target: "/mnt/iv/", ImageOptions: &mount.ImageOptions{Subpath: "etc"}}}})
	if st.GetImage().GetImage() != "busybox" || st.GetImage().GetImageRef() != "sha256:ab12" || !st.Readonly || st.ImageSubPath != "etc" || st.ContainerPath != "/mnt/iv" {
		t.Errorf("status mount %+v", st)
	}
}
