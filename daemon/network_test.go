package daemon

import (
	"context"
	"slices"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

func names(list []network.Summary) []string {
	out := []string{}
	for _, n := range list {
		out = append(out, n.Name)
	}
	return out
}

func TestNetworkList(t *testing.T) {
	d := daemonWithOther(t)
	for _, tc := range []struct {
		f    filters.Args
		want []string
		bad  string
	}{
		{f: filters.NewArgs(), want: []string{"host", "none"}},
		{f: filters.NewArgs(filters.Arg("name", "ho")), want: []string{"host"}},
		{f: filters.NewArgs(filters.Arg("driver", "null")), want: []string{"none"}},
		{f: filters.NewArgs(filters.Arg("id", networkID("none")[:12])), want: []string{"none"}},
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
		list, err := d.NetworkList(context.Background(), tc.f)
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

func TestNetworkInspect(t *testing.T) {
	d := daemonWithOther(t)
	c := container.New(d.containers.Root(), "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "/web")
	c.HostConfig = &containertypes.HostConfig{NetworkMode: "host"}
	c.State.SetRunning(42)
	if err := d.containers.Add(c); err != nil {
		t.Fatal(err)
	}
	other, _ := d.containers.Get("other")
	other.HostConfig = &containertypes.HostConfig{NetworkMode: "host"} // not running: not listed

	for _, ref := range []string{"host", networkID("host"), networkID("host")[:10]} {
		nw, err := d.NetworkInspect(context.Background(), ref)
		if err != nil || nw.Name != "host" || nw.Driver != "host" || nw.Scope != "local" {
			t.Fatalf("%s: %+v %v", ref, nw, err)
		}
		if len(nw.Containers) != 1 || nw.Containers[c.ID].Name != "web" {
			t.Errorf("%s: containers %+v, want only web", ref, nw.Containers)
		}
	}
	nw, err := d.NetworkInspect(context.Background(), "none")
	if err != nil || nw.Driver != "null" || len(nw.Containers) != 0 {
		t.Errorf("none: %+v %v", nw, err)
	}
	for _, ref := range []string{"bridge", "", "nosuch"} {
		if _, err := d.NetworkInspect(context.Background(), ref); !errdefs.IsNotFound(err) {
			t.Errorf("%q: got %v, want 404", ref, err)
		}
	}
	// The container's inspect names the same network.
	hc := &container.Container{HostConfig: &containertypes.HostConfig{NetworkMode: "host"}, Config: &containertypes.Config{}}
	if got := d.inspectNetworkSettings(hc).Networks["host"].NetworkID; got != networkID("host") {
		t.Errorf("container inspect NetworkID %q, want %q", got, networkID("host"))
	}
}

// TestValidateNetworkingNoBridge: with --bridge none, the default network
// named in EndpointsConfig (as the stock CLI sends it) is no error; an
// unknown network is a 404.
func TestValidateNetworkingNoBridge(t *testing.T) {
	d := daemonWithOther(t)
	cfg := &containertypes.Config{}
	for _, mode := range []string{"default", "bridge"} {
		nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{mode: {}}}
		if err := d.validateNetworking(cfg, &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(mode)}, nc); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
	err := d.validateNetworking(cfg, &containertypes.HostConfig{NetworkMode: "nosuch"}, nil)
	if !errdefs.IsNotFound(err) {
		t.Errorf("unknown network: %v", err)
	}
}
