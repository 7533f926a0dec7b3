package shimproto

import (
	"testing"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/devices/config"
)

func TestLimitsCgroupIsThePayloadsParent(t *testing.T) {
	mem := int64(64 << 20)
	r := &cgroups.Resources{Memory: mem, Devices: []*config.Rule{{Type: 'a', Major: -1, Minor: -1, Permissions: "rwm"}}}
	for _, tc := range []struct {
		path    string
		systemd bool
		want    cgroups.Cgroup
	}{
		{"/docker/abc/payload", false, cgroups.Cgroup{Path: "/docker/abc"}},
		{"/a/b/abc/payload", false, cgroups.Cgroup{Path: "/a/b/abc"}},
		{"machine-docker-abc.slice:docker:abc", true, cgroups.Cgroup{Name: "machine-docker-abc.slice", Parent: "machine-docker.slice", Systemd: true}},
		{"docker-abc.slice:docker:abc", true, cgroups.Cgroup{Name: "docker-abc.slice", Parent: "docker.slice", Systemd: true}},
		{"x.slice:docker:abc", true, cgroups.Cgroup{Name: "x.slice", Parent: "-.slice", Systemd: true}},
	} {
		got, err := LimitsCgroup(tc.path, tc.systemd, r)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if got.Path != tc.want.Path || got.Name != tc.want.Name || got.Parent != tc.want.Parent || got.Systemd != tc.want.Systemd {
			t.Errorf("%s: %+v, want %+v", tc.path, got, tc.want)
		}
		// The limits and the device rules, a copy: the payload keeps its own.
		if got.Resources == r || got.Resources.Memory != mem || len(got.Resources.Devices) != 1 {
			t.Errorf("%s: resources %+v", tc.path, got.Resources)
		}
	}
	for _, bad := range []struct {
		path    string
		systemd bool
	}{{"/abc", false}, {"abc", false}, {"/", false}, {"machine.slice", true}, {"a.scope:docker:abc", true}} {
		if _, err := LimitsCgroup(bad.path, bad.systemd, nil); err == nil {
			t.Errorf("%q (systemd %v) accepted", bad.path, bad.systemd)
		}
	}
}

func TestPayloadRelPath(t *testing.T) {
	for _, tc := range []struct {
		path    string
		systemd bool
		want    string
	}{
		{"/docker/abc/payload", false, "/docker/abc/payload"},
		{"machine-docker-abc.slice:docker:abc", true, "/machine.slice/machine-docker.slice/machine-docker-abc.slice/docker-abc.scope"},
	} {
		got, err := PayloadRelPath(tc.path, tc.systemd)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}
