package opts

import (
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
)

func TestParseImageMount(t *testing.T) {
	ms, err := ParseMounts([]string{"type=image,source=busybox,target=/m,image-subpath=etc,readonly=false"})
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	if m.Type != mount.TypeImage || m.Source != "busybox" || m.Target != "/m" || m.ImageOptions == nil || m.ImageOptions.Subpath != "etc" {
		t.Errorf("parsed %+v", m)
	}
	if _, err := ParseMounts([]string{"type=volume,target=/m,image-subpath=etc"}); err == nil || !strings.Contains(err.Error(), "cannot mix 'image-*'") {
		t.Errorf("image-subpath on a volume: %v", err)
	}
}
