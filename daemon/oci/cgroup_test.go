package oci

import (
	"strings"
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
	for _, bad := range []string{"custom", "/docker", "a.slice/b.slice", "a:b.slice", "../x.slice"} {
		o := baseOpts()
		o.CgroupParent, o.SystemdCgroup = bad, true
		if _, err := Build(o); !errdefs.IsInvalidParameter(err) {
			t.Errorf("systemd parent %q: %v, want invalid parameter", bad, err)
		}
	}
	// With cgroupfs no ".." may lead the cgroup out of where it says.
	for _, bad := range []string{"..", "../../x", "/docker/../.."} {
		o := baseOpts()
		o.CgroupParent = bad
		if _, err := Build(o); !errdefs.IsInvalidParameter(err) {
			t.Errorf("cgroupfs parent %q: %v, want invalid parameter", bad, err)
		}
	}
}

func TestValidateCgroupParent(t *testing.T) {
	for _, tc := range []struct {
		parent  string
		systemd bool
		ok      bool
	}{
		{"", false, true},
		{"", true, true},
		{"custom", false, true},
		{"/a/b", false, true},
		{"/", false, true},
		{"a..b", false, true},
		{"..", false, false},
		{"../x", false, false},
		{"/docker/../..", false, false},
		{"a/../b", false, false},
		{"a/..", false, false},
		{"a\nb", false, false},
		{"my.slice", true, true},
		{"..", true, false},
		{"../x.slice", true, false},
		{"custom", true, false},
	} {
		err := ValidateCgroupParent(tc.parent, tc.systemd)
		if tc.ok != (err == nil) || (err != nil && !errdefs.IsInvalidParameter(err)) {
			t.Errorf("ValidateCgroupParent(%q, systemd %v) = %v", tc.parent, tc.systemd, err)
		}
		if err != nil && !tc.systemd && !strings.Contains(err.Error(), "--cgroup-parent") {
			t.Errorf("%q: the message does not name the flag: %v", tc.parent, err)
		}
	}
}

func TestCgroupLayout(t *testing.T) {
	for _, tc := range []struct {
		ann map[string]string
		ok  bool
	}{
		{nil, true},
		{map[string]string{"other": "x"}, true},
		{map[string]string{CgroupLayoutAnnotation: CgroupLayoutUnified}, true},
		{map[string]string{CgroupLayoutAnnotation: ""}, false},
		{map[string]string{CgroupLayoutAnnotation: "v1"}, false},
	} {
		err := ValidateCgroupLayout(tc.ann)
		if tc.ok != (err == nil) || (err != nil && !errdefs.IsInvalidParameter(err)) {
			t.Errorf("ValidateCgroupLayout(%v) = %v", tc.ann, err)
		}
	}
	// The spec carries the layout the daemon gives, never a copy that came
	// in with other annotations.
	for _, layout := range []string{"", CgroupLayoutUnified} {
		o := baseOpts()
		o.CgroupLayout = layout
		o.Annotations = map[string]string{CgroupLayoutAnnotation: "smuggled"}
		s, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.Annotations[CgroupLayoutAnnotation]
		if layout == "" && ok || layout != "" && got != layout {
			t.Errorf("layout %q: spec annotation %q (present %v)", layout, got, ok)
		}
	}
}
