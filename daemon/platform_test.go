package daemon

import (
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
)

func TestCheckImagePlatform(t *testing.T) {
	amd64 := ocispec.Platform{OS: "linux", Architecture: "amd64"}
	armv7 := ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}
	for _, tc := range []struct {
		img      ocispec.Platform
		platform string
		class    errdefs.Class
	}{
		{amd64, "", errdefs.ClassUnknown},
		{amd64, "linux/amd64", errdefs.ClassUnknown},
		{amd64, "Linux/x86_64", errdefs.ClassUnknown},
		{amd64, "linuxDifferentOS/amd64", errdefs.ClassNotFound},
		{amd64, "linux/amd64DifferentArch", errdefs.ClassNotFound},
		{amd64, "linux/arm64", errdefs.ClassNotFound},
		{armv7, "linux/arm", errdefs.ClassUnknown},
		{armv7, "linux/arm/v7", errdefs.ClassUnknown},
		{armv7, "linux/arm/v6", errdefs.ClassNotFound},
		// An arm/v7 CPU runs arm/v6 images, as Docker's create has it.
		{ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}, "linux/arm/v7", errdefs.ClassUnknown},
		{amd64, "linux/amd64/x/y", errdefs.ClassInvalidParameter},
		{amd64, "linux//amd64", errdefs.ClassInvalidParameter},
		{amd64, "linux/am d64", errdefs.ClassInvalidParameter},
	} {
		err := checkImagePlatform("busybox:latest", tc.img, tc.platform)
		if errdefs.ClassOf(err) != tc.class || (tc.class == errdefs.ClassUnknown) != (err == nil) {
			t.Errorf("image %v, platform %q: got %v; want class %v", tc.img, tc.platform, err, tc.class)
		}
	}
	err := checkImagePlatform("busybox:latest", amd64, "linuxDifferentOS/amd64")
	want := "image with reference busybox:latest was found but its platform (linux/amd64) does not match the specified platform (linuxdifferentos/amd64)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v; want %q", err, want)
	}
	// "linux" alone is this host's architecture.
	if p, err := platform.Parse("linux"); err != nil || p.Architecture != platform.Default().Architecture {
		t.Errorf("linux: %+v %v", p, err)
	}
}
