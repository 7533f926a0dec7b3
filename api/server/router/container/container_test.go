package container

import (
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/pkg/errdefs"
)

func TestVersionedCreate(t *testing.T) {
	three := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"net2": {}, "net1": {}, "net3": {}}}
	one := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"net1": {}}}
	annotations := map[string]string{"foo": "bar"}
	for _, tc := range []struct {
		version         string
		networking      *network.NetworkingConfig
		keepAnnotations bool
		err             string
	}{
		{"1.51", three, true, ""},
		{"1.44", three, true, ""},
		{"1.43", one, true, ""},
		{"1.43", nil, true, ""},
		{"1.43", three, true, "Container cannot be created with multiple network endpoints: net1, net2, net3"},
		{"1.42", one, false, ""},
	} {
		p := backend.CreateParams{
			HostConfig: &containertypes.HostConfig{Annotations: annotations},
			Networking: tc.networking,
		}
		err := versionedCreate(tc.version, &p)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || !errdefs.IsInvalidParameter(err) {
				t.Errorf("API %s: got %v, want 400 %q", tc.version, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("API %s: %v", tc.version, err)
		}
		if kept := p.HostConfig.Annotations != nil; kept != tc.keepAnnotations {
			t.Errorf("API %s: annotations kept %v, want %v", tc.version, kept, tc.keepAnnotations)
		}
	}
}
