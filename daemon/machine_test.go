package daemon

import (
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/systemd"
)

func TestCgroupDriver(t *testing.T) {
	def := cgroupDriverCgroupfs
	if systemd.Booted() {
		def = cgroupDriverSystemd
	}
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{nil, def},
		{[]string{"native.cgroupdriver=systemd"}, "systemd"},
		{[]string{"native.cgroupdriver=cgroupfs"}, "cgroupfs"},
		{[]string{"Native.CgroupDriver = cgroupfs"}, "cgroupfs"},
		{[]string{"native.cgroupdriver=systemd", "native.cgroupdriver=cgroupfs"}, "cgroupfs"},
		{[]string{"isolation=default"}, def},
	} {
		got, err := cgroupDriver(tc.opts)
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.opts, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"native.cgroupdriver=lxc"}, {"native.cgroupdriver"}, {"native.cgroupdriver="}} {
		if _, err := cgroupDriver(bad); !errdefs.IsInvalidParameter(err) {
			t.Errorf("%q: %v, want invalid parameter", bad, err)
		}
	}
}
