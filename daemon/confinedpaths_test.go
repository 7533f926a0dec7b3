package daemon

import (
	"slices"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/daemon/oci"
)

// Docker records the default masked and read-only paths at create (inspect
// shows them), keeps a list the user gave, even empty, and records none for
// --privileged.
func TestDefaultConfinedPaths(t *testing.T) {
	hc := &containertypes.HostConfig{}
	defaultConfinedPaths(hc)
	if !slices.Equal(hc.MaskedPaths, oci.DefaultMaskedPaths()) || !slices.Equal(hc.ReadonlyPaths, oci.DefaultReadonlyPaths) {
		t.Errorf("defaults: %v %v", hc.MaskedPaths, hc.ReadonlyPaths)
	}
	hc = &containertypes.HostConfig{MaskedPaths: []string{}, ReadonlyPaths: []string{"/proc/bus"}}
	defaultConfinedPaths(hc)
	if hc.MaskedPaths == nil || len(hc.MaskedPaths) != 0 || !slices.Equal(hc.ReadonlyPaths, []string{"/proc/bus"}) {
		t.Errorf("given: %v %v", hc.MaskedPaths, hc.ReadonlyPaths)
	}
	hc = &containertypes.HostConfig{Privileged: true}
	defaultConfinedPaths(hc)
	if hc.MaskedPaths != nil || hc.ReadonlyPaths != nil {
		t.Errorf("privileged: %v %v", hc.MaskedPaths, hc.ReadonlyPaths)
	}
}
