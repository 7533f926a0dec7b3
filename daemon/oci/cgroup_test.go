package oci

import (
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestCgroupsPathByDriver(t *testing.T) {
	for _, tc := range []struct {
		parent  string
		systemd bool
		want    string
	}{
		{"", false, "/docker/abc/payload"},
		{"custom", false, "/custom/abc/payload"},
		{"/a/b", false, "/a/b/abc/payload"},
		{"", true, "machine-docker-abc.slice:docker:abc"},
		{"my.slice", true, "my-docker-abc.slice:docker:abc"},
		{"-.slice", true, "docker-abc.slice:docker:abc"},
	} {
		o := baseOpts()
		o.CgroupParent, o.SystemdCgroup = tc.parent, tc.systemd
		s, err := Build(o)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if s.Linux.CgroupsPath != tc.want {
			t.Errorf("parent %q systemd %v: %q, want %q", tc.parent, tc.systemd, s.Linux.CgroupsPath, tc.want)
		}
	}
	// With systemd the parent must be a slice, as Docker requires.
	for _, bad := range []string{"custom", "/docker", "a.slice/b.slice", "a:b.slice"} {
		o := baseOpts()
		o.CgroupParent, o.SystemdCgroup = bad, true
		if _, err := Build(o); !errdefs.IsInvalidParameter(err) {
			t.Errorf("systemd parent %q: %v, want invalid parameter", bad, err)
		}
	}
}
