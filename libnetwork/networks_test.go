package libnetwork

import (
	"context"
	"slices"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/pkg/errdefs"
)

// newTestController is a controller without the default bridge: it
// makes nothing on the host.
func newTestController(t *testing.T) *Controller {
	t.Helper()
	c, err := New(Config{Root: t.TempDir(), ExecRoot: t.TempDir(), BridgeDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(true) })
	return c
}

func names(list []network.Summary) []string {
	out := []string{}
	for _, n := range list {
		out = append(out, n.Name)
	}
	return out
}

func TestNetworkList(t *testing.T) {
	c := newTestController(t)
	for _, tc := range []struct {
		f    filters.Args
		want []string
		bad  string
	}{
		{f: filters.NewArgs(), want: []string{"host", "none"}},
		{f: filters.NewArgs(filters.Arg("name", "ho")), want: []string{"host"}},
		{f: filters.NewArgs(filters.Arg("driver", "null")), want: []string{"none"}},
		{f: filters.NewArgs(filters.Arg("id", NetworkID("none")[:12])), want: []string{"none"}},
		{f: filters.NewArgs(filters.Arg("scope", "local")), want: []string{"host", "none"}},
		{f: filters.NewArgs(filters.Arg("scope", "swarm")), want: []string{}},
		{f: filters.NewArgs(filters.Arg("label", "a=b")), want: []string{}},
		{f: filters.NewArgs(filters.Arg("type", "builtin")), want: []string{"host", "none"}},
		{f: filters.NewArgs(filters.Arg("type", "custom")), want: []string{}},
		{f: filters.NewArgs(filters.Arg("dangling", "true")), want: []string{}},
		{f: filters.NewArgs(filters.Arg("dangling", "false")), want: []string{"host", "none"}},
		{f: filters.NewArgs(filters.Arg("dangling", "maybe")), bad: `invalid value for filter 'dangling', must be "true" (or "1"), or "false" (or "0")`},
		{f: filters.NewArgs(filters.Arg("type", "other")), bad: "invalid filter: 'type'='other'"},
		{f: filters.NewArgs(filters.Arg("nosuch", "x")), bad: "invalid filter 'nosuch'"},
	} {
		list, err := c.List(context.Background(), tc.f)
		if tc.bad != "" {
			if err == nil || err.Error() != tc.bad || !errdefs.IsInvalidParameter(err) {
				t.Errorf("%v: got %v, want 400 %q", tc.f, err, tc.bad)
			}
			continue
		}
		if err != nil || !slices.Equal(names(list), tc.want) {
			t.Errorf("%v: got %v %v, want %v", tc.f, names(list), err, tc.want)
		}
	}
}

// TestNetworkInspect: a builtin network by name, ID or ID prefix, with
// the containers joined to it (until they leave).
func TestNetworkInspect(t *testing.T) {
	c := newTestController(t)
	const id = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	if _, err := c.Join(context.Background(), JoinRequest{ContainerID: id, Name: "/web", NetworkMode: "host"}); err != nil {
		t.Fatal(err)
	}
	c.Rename(id, "/site")
	for _, ref := range []string{"host", NetworkID("host"), NetworkID("host")[:10]} {
		nw, err := c.Inspect(context.Background(), ref)
		if err != nil || nw.Name != "host" || nw.Driver != "host" || nw.Scope != "local" {
			t.Fatalf("%s: %+v %v", ref, nw, err)
		}
		if len(nw.Containers) != 1 || nw.Containers[id].Name != "site" {
			t.Errorf("%s: containers %+v, want only site", ref, nw.Containers)
		}
	}
	nw, err := c.Inspect(context.Background(), "none")
	if err != nil || nw.Driver != "null" || len(nw.Containers) != 0 {
		t.Errorf("none: %+v %v", nw, err)
	}
	for _, ref := range []string{"bridge", "", "nosuch"} {
		if _, err := c.Inspect(context.Background(), ref); !errdefs.IsNotFound(err) {
			t.Errorf("%q: got %v, want 404", ref, err)
		}
	}
	c.Leave(id, "host", Attachment{})
	if nw, _ := c.Inspect(context.Background(), "host"); len(nw.Containers) != 0 {
		t.Errorf("after Leave: %+v", nw.Containers)
	}
}

// TestValidateNetworkingNoBridge: with --bridge none, the default network
// named in EndpointsConfig (as the stock CLI sends it) is no error; an
// unknown network is a 404.
func TestValidateNetworkingNoBridge(t *testing.T) {
	c := newTestController(t)
	cfg := &containertypes.Config{}
	for _, mode := range []string{"default", "bridge"} {
		nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{mode: {}}}
		if err := c.ValidateNetworking(cfg, &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(mode)}, nc); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
	err := c.ValidateNetworking(cfg, &containertypes.HostConfig{NetworkMode: "nosuch"}, nil)
	if !errdefs.IsNotFound(err) {
		t.Errorf("unknown network: %v", err)
	}
}
