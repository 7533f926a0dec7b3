package container

import (
	"net/http/httptest"
	"net/url"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
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

// Image mounts came with API 1.48: refused before.
func TestVersionedCreateImageMount(t *testing.T) {
	for version, ok := range map[string]bool{"1.47": false, "1.48": true, "1.51": true} {
		p := backend.CreateParams{HostConfig: &containertypes.HostConfig{
			Mounts: []mount.Mount{{Type: mount.TypeImage, Source: "busybox", Target: "/m"}}}}
		err := versionedCreate(version, &p)
		if ok != (err == nil) || err != nil && !errdefs.IsInvalidParameter(err) {
			t.Errorf("API %s: %v", version, err)
		}
	}
}

// Docker's messages for a bad resize, which its tests compare.
func TestSizeErrors(t *testing.T) {
	cases := []struct {
		h, w    *string
		wantErr string
	}{
		{nil, ptr("100"), `invalid resize height "": invalid syntax`},
		{ptr("100"), nil, `invalid resize width "": invalid syntax`},
		{ptr(""), ptr("100"), `invalid resize height "": invalid syntax`},
		{ptr("not-a-number"), ptr("100"), `invalid resize height "not-a-number": invalid syntax`},
		{ptr("100"), ptr("not-a-number"), `invalid resize width "not-a-number": invalid syntax`},
		{ptr("-100"), ptr("100"), `invalid resize height "-100": value out of range`},
		{ptr("100"), ptr("-100"), `invalid resize width "-100": value out of range`},
		{ptr("4294967296"), ptr("100"), `invalid resize height "4294967296": value out of range`},
		{ptr("100"), ptr("99999999999999999999999"), `invalid resize width "99999999999999999999999": value out of range`},
	}
	for _, c := range cases {
		v := url.Values{}
		if c.h != nil {
			v.Set("h", *c.h)
		}
		if c.w != nil {
			v.Set("w", *c.w)
		}
		_, _, err := size(httptest.NewRequest("POST", "/containers/x/resize?"+v.Encode(), nil))
		if err == nil || err.Error() != c.wantErr || !errdefs.IsInvalidParameter(err) {
			t.Errorf("%v: got %v, want %q (invalid parameter)", v, err, c.wantErr)
		}
	}
	h, w, err := size(httptest.NewRequest("POST", "/containers/x/resize?h=4294967295&w=0", nil))
	if err != nil || h != 4294967295 || w != 0 {
		t.Errorf("bounds: %d %d %v", h, w, err)
	}
}

func ptr(s string) *string { return &s }
