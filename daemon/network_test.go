package daemon

import (
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/libnetwork"
)

// TestInspectHostNetwork: a container's inspect names the host network
// by the ID the network's inspect has.
func TestInspectHostNetwork(t *testing.T) {
	d := daemonWithOther(t)
	hc := &container.Container{HostConfig: &containertypes.HostConfig{NetworkMode: "host"}, Config: &containertypes.Config{}}
	if got := d.inspectNetworkSettings(hc).Networks["host"].NetworkID; got != libnetwork.NetworkID("host") {
		t.Errorf("container inspect NetworkID %q, want %q", got, libnetwork.NetworkID("host"))
	}
}
