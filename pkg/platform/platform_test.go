package platform

import (
	"runtime"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestParse(t *testing.T) {
	host := runtime.GOARCH
	for _, tc := range []struct {
		in   string
		want ocispec.Platform
	}{
		{"linux", ocispec.Platform{OS: "linux", Architecture: host}},
		{"LINUX", ocispec.Platform{OS: "linux", Architecture: host}},
		{"macos", ocispec.Platform{OS: "darwin", Architecture: host}},
		{"windows(10.0.17763)", ocispec.Platform{OS: "windows", OSVersion: "10.0.17763", Architecture: host}},
		{"arm64", ocispec.Platform{OS: "linux", Architecture: "arm64"}},
		{"x86_64", ocispec.Platform{OS: "linux", Architecture: "amd64"}},
		{"linux/sparc64", ocispec.Platform{OS: "linux", Architecture: "sparc64"}},
		{"Linux/X86_64", ocispec.Platform{OS: "linux", Architecture: "amd64"}},
		{"linux/aarch64", ocispec.Platform{OS: "linux", Architecture: "arm64"}},
		{"linux/arm", ocispec.Platform{OS: "linux", Architecture: "arm"}},
		{"linux/armhf", ocispec.Platform{OS: "linux", Architecture: "arm"}},
		{"linux/armel", ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}},
		{"linux/arm/7", ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}},
		{"linux/arm64/v8", ocispec.Platform{OS: "linux", Architecture: "arm64"}},
		{"linux/amd64/v3", ocispec.Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}},
		{"freebsd/whatever", ocispec.Platform{OS: "freebsd", Architecture: "whatever"}},
	} {
		got, err := Parse(tc.in)
		if err != nil || got.OS != tc.want.OS || got.Architecture != tc.want.Architecture ||
			got.Variant != tc.want.Variant || got.OSVersion != tc.want.OSVersion {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for in, msg := range map[string]string{
		"       ":         "is an invalid OS component",
		"/":               "is an invalid OS component",
		"":                "is an invalid OS component",
		"nintendo64":      "unknown operating system or architecture",
		"linux//amd64":    "is an invalid component",
		"linux/am d64":    "is an invalid component",
		"linux/amd64/x/y": "cannot parse platform specifier",
		"linux/*":         "wildcards not yet supported",
	} {
		_, err := Parse(in)
		if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v; want InvalidParameter with %q", in, err, msg)
		}
	}
}

func TestCheckOS(t *testing.T) {
	if err := CheckOS("linux"); err != nil {
		t.Error(err)
	}
	for _, os := range []string{"darwin", "windows", ""} {
		if err := CheckOS(os); !errdefs.IsInvalidParameter(err) || err.Error() != "operating system is not supported" {
			t.Errorf("CheckOS(%q): %v", os, err)
		}
	}
}

func TestDecode(t *testing.T) {
	p, err := Decode(`{"os":"linux","architecture":"arm64","variant":"v8"}`)
	if err != nil || p.OS != "linux" || p.Architecture != "arm64" || p.Variant != "v8" {
		t.Errorf("Decode: %+v %v", p, err)
	}
	for in, msg := range map[string]string{
		`{`:                    "failed to parse platform",
		`{"variant":"v7"}`:     "optional platform fields provided, but OS and Architecture are missing",
		`{"os":"linux"}`:       "both OS and Architecture must be provided",
		`{"architecture":"x"}`: "both OS and Architecture must be provided",
	} {
		if _, err := Decode(in); !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), msg) {
			t.Errorf("Decode(%s): %v; want %q", in, err, msg)
		}
	}
}

func TestMatches(t *testing.T) {
	amd64 := ocispec.Platform{OS: "linux", Architecture: "amd64"}
	armv7 := ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}
	for _, tc := range []struct {
		want, have ocispec.Platform
		ok         bool
	}{
		{amd64, amd64, true},
		{ocispec.Platform{OS: "Linux", Architecture: "x86_64"}, amd64, true},
		{ocispec.Platform{OS: "windows", Architecture: "amd64"}, amd64, false},
		{ocispec.Platform{OS: "linux", Architecture: "arm64"}, amd64, false},
		{ocispec.Platform{OS: "linux", Architecture: "arm"}, armv7, true},
		{ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "7"}, armv7, true},
		{ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}, armv7, false},
		{ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, ocispec.Platform{OS: "linux", Architecture: "arm64"}, true},
	} {
		if got := Matches(tc.want, tc.have); got != tc.ok {
			t.Errorf("Matches(%+v, %+v) = %v", tc.want, tc.have, got)
		}
	}
	if got := Format(armv7); got != "linux/arm/v7" {
		t.Errorf("Format: %q", got)
	}
}
