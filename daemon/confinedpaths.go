package daemon

import (
	"slices"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/daemon/oci"
)

// defaultConfinedPaths records Docker's masked and read-only paths in the
// HostConfig of a container that gave none, as Docker does at create:
// inspect shows them, and a later daemon with other defaults does not
// change what an existing container hides. A privileged container has
// none unless it asked for some.
func defaultConfinedPaths(hc *containertypes.HostConfig) {
	if hc.Privileged {
		return
	}
	if hc.MaskedPaths == nil {
		hc.MaskedPaths = oci.DefaultMaskedPaths()
	}
	if hc.ReadonlyPaths == nil {
		hc.ReadonlyPaths = slices.Clone(oci.DefaultReadonlyPaths)
	}
}
