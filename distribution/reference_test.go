package distribution

import (
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
)

func TestParsePullRef(t *testing.T) {
	const d = "sha256:0af0078a6df3c78a97173e9ea12fd11f42cb5cc692e1a0b2ff401ebf8576261a"
	for _, c := range []struct {
		from, tag, want string
		all             bool
	}{
		{"busybox", "latest", "docker.io/library/busybox:latest", false},
		{"busybox", "", "docker.io/library/busybox", true},
		{"library/busybox", "1.36", "docker.io/library/busybox:1.36", false},
		{"docker.io/library/busybox", "", "docker.io/library/busybox", true},
		{"busybox:1.36", "", "docker.io/library/busybox:1.36", false},
		{"localhost:5000/a/b", "v1", "localhost:5000/a/b:v1", false},
		{"127.0.0.1:5000/b", d, "127.0.0.1:5000/b@" + d, false},
		{"127.0.0.1:5000/b@" + d, "", "127.0.0.1:5000/b@" + d, false},
		{"quay.io/x/y:old", "new", "quay.io/x/y:new", false},
	} {
		named, all, err := ParsePullRef(c.from, c.tag)
		if err != nil {
			t.Errorf("%s %s: %v", c.from, c.tag, err)
			continue
		}
		if named.String() != c.want || all != c.all {
			t.Errorf("%s %s: %s all=%v, want %s all=%v", c.from, c.tag, named, all, c.want, c.all)
		}
	}
	for _, bad := range [][2]string{{"UPPER", ""}, {"a b", ""}, {"busybox", "bad tag"}} {
		if _, _, err := ParsePullRef(bad[0], bad[1]); !errdefs.IsInvalidParameter(err) {
			t.Errorf("%v: %v, want invalid parameter", bad, err)
		}
	}
}

func TestParsePlatform(t *testing.T) {
	if p, err := parsePlatform(""); err != nil || p.OS != "linux" || p.Architecture != runtime.GOARCH {
		t.Errorf("the host's platform: %+v %v", p, err)
	}
	for in, want := range map[string]string{
		"linux":          "linux/" + runtime.GOARCH,
		"linux/amd64":    "linux/amd64",
		"linux/x86_64":   "linux/amd64",
		"linux/aarch64":  "linux/arm64",
		"linux/arm64/v8": "linux/arm64/v8",
		"linux/arm/v7":   "linux/arm/v7",
		"arm64":          "linux/arm64",
		"windows/amd64":  "windows/amd64",
		"LINUX/AMD64":    "linux/amd64",
		// Any name is an architecture after an OS: the pull then finds
		// no manifest for it, as Docker's does.
		"linux/foobar": "linux/foobar",
	} {
		p, err := parsePlatform(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := platform.Format(p); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"foobar", "linux//amd64", "linux/amd64/v1/x"} {
		_, err := parsePlatform(bad)
		if !errdefs.IsInvalidParameter(err) {
			t.Errorf("%q: %v, want 400", bad, err)
		}
	}
}

func TestSelectManifest(t *testing.T) {
	d := func(os, arch, variant string) v1.Descriptor {
		return v1.Descriptor{Platform: &v1.Platform{OS: os, Architecture: arch, Variant: variant}}
	}
	idx := &v1.IndexManifest{Manifests: []v1.Descriptor{
		{},                          // no platform
		d("unknown", "unknown", ""), // an attestation
		d("linux", "arm", "v6"),
		d("linux", "arm", "v7"),
		d("linux", "386", ""),
		d("linux", "amd64", ""),
		d("linux", "arm64", ""),
		d("windows", "amd64", ""),
	}}
	for _, c := range []struct {
		want ocispec.Platform
		idx  int
	}{
		{ocispec.Platform{OS: "linux", Architecture: "amd64"}, 5},
		{ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, 3},
		{ocispec.Platform{OS: "linux", Architecture: "arm"}, 3},
		{ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}, 2},
		{ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, 6},
		{ocispec.Platform{OS: "linux", Architecture: "arm64"}, 6},
		{ocispec.Platform{OS: "windows", Architecture: "amd64"}, 7},
	} {
		got, ok := selectManifest(idx, c.want)
		if !ok || got.Platform != idx.Manifests[c.idx].Platform {
			t.Errorf("%v: got %v (%v), want entry %d", c.want, got.Platform, ok, c.idx)
		}
	}
	if _, ok := selectManifest(idx, ocispec.Platform{OS: "linux", Architecture: "s390x"}); ok {
		t.Error("s390x matched")
	}
	// An arm/v8 request runs arm/v7 code: the best older variant serves it.
	if got, ok := selectManifest(idx, ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v8"}); !ok || got.Platform != idx.Manifests[3].Platform {
		t.Errorf("arm/v8: got %v (%v), want arm/v7", got.Platform, ok)
	}
}

func TestInsecureRegistries(t *testing.T) {
	// Without CIDRs no name is looked up (and the test stays off the network).
	s, err := New(Config{InsecureRegistries: []string{"reg.example:5000"}, Mirrors: []string{"http://mirror.example:5001"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"127.0.0.1:5000": true, "localhost:5000": true, "[::1]:5000": true, "127.3.4.5": true,
		"reg.example:5000": true, "reg.example:5001": false, "10.2.0.1": false,
		"mirror.example:5001": true, "quay.io": false, "docker.io": false,
	} {
		if got := s.isInsecure(host); got != want {
			t.Errorf("%s: insecure=%v, want %v", host, got, want)
		}
	}
	s, err = New(Config{InsecureRegistries: []string{"10.1.0.0/16"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"10.1.2.3:443": true, "10.2.0.1": false, "[fd00::1]:5000": false} {
		if got := s.isInsecure(host); got != want {
			t.Errorf("%s: insecure=%v, want %v", host, got, want)
		}
	}
	if _, err := New(Config{Mirrors: []string{"mirror.example"}}, nil); err == nil {
		t.Error("a mirror without a scheme was accepted")
	}
}
