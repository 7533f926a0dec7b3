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
		// The library keeps a variant given after arm64 (the hand-written
		// parser dropped v8, as Normalize does).
		{"linux/arm64/v8", ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}},
		{"linux/aarch64/8", ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}},
		{"linux/arm64", ocispec.Platform{OS: "linux", Architecture: "arm64"}},
		// i386 is 386, but i486..i686 are not aliases (the hand-written
		// parser took them for 386): after an OS they are names as given,
		// alone they are no architecture (TestParseRefuses).
		{"i386", ocispec.Platform{OS: "linux", Architecture: "386"}},
		{"linux/i686", ocispec.Platform{OS: "linux", Architecture: "i686"}},
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
		"i686":            "unknown operating system or architecture",
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

func TestParseMessages(t *testing.T) {
	// Docker's texts, which its tests compare whole.
	for in, msg := range map[string]string{
		"/":          `"" is an invalid OS component of "/": OSAndVersion specifier component must match "^([A-Za-z0-9_-]+)(?:\\(([A-Za-z0-9_.-]*)\\))?$": invalid argument`,
		"nintendo64": `"nintendo64": unknown operating system or architecture: invalid argument`,
	} {
		if _, err := Parse(in); err == nil || err.Error() != msg {
			t.Errorf("Parse(%q): %v; want %s", in, err, msg)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		in   ocispec.Platform
		want string
	}{
		{ocispec.Platform{OS: "Linux", Architecture: "x86_64"}, "linux/amd64"},
		{ocispec.Platform{OS: "linux", Architecture: "aarch64"}, "linux/arm64"},
		{ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "8"}, "linux/arm64"},
		{ocispec.Platform{OS: "linux", Architecture: "arm"}, "linux/arm/v7"},
		{ocispec.Platform{OS: "linux", Architecture: "armhf"}, "linux/arm/v7"},
		{ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "6"}, "linux/arm/v6"},
		{ocispec.Platform{OS: "macos", Architecture: "arm64"}, "darwin/arm64"},
		{ocispec.Platform{OS: "linux", Architecture: "amd64", Variant: "v1"}, "linux/amd64"},
		// The library's: arm64 v9 has its short name; an empty OS is the
		// host's (the hand-written one left both alone).
		{ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "9"}, "linux/arm64/v9"},
		{ocispec.Platform{Architecture: "amd64"}, runtime.GOOS + "/amd64"},
	} {
		if got := Format(Normalize(tc.in)); got != tc.want {
			t.Errorf("Normalize(%+v) = %s; want %s", tc.in, got, tc.want)
		}
	}
}

func TestMatches(t *testing.T) {
	amd64 := ocispec.Platform{OS: "linux", Architecture: "amd64"}
	armv7 := ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}
	armv6 := ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}
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
		// An image without a variant serves any variant of its
		// architecture (image configs often leave it out).
		{ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}, ocispec.Platform{OS: "linux", Architecture: "arm"}, true},
		{ocispec.Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}, amd64, true},
		// Where platforms.Only differs from the hand-written rule (same
		// variant when want names one, any when it names none): what a
		// CPU of want runs natively matches, and only that.
		{armv7, armv6, true},
		{amd64, ocispec.Platform{OS: "linux", Architecture: "386"}, true},
		{ocispec.Platform{OS: "linux", Architecture: "arm64"}, ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, true},
		{amd64, ocispec.Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}, false},
		{ocispec.Platform{OS: "linux", Architecture: "arm"}, ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v8"}, false},
	} {
		if got := Matches(tc.want, tc.have); got != tc.ok {
			t.Errorf("Matches(%+v, %+v) = %v", tc.want, tc.have, got)
		}
	}
	if got := Format(armv7); got != "linux/arm/v7" {
		t.Errorf("Format: %q", got)
	}
}

func TestSelect(t *testing.T) {
	p := func(arch, variant string) *ocispec.Platform {
		return &ocispec.Platform{OS: "linux", Architecture: arch, Variant: variant}
	}
	have := []*ocispec.Platform{nil, p("arm", "v5"), p("arm", ""), p("arm", "v6"), p("arm", "v7"), p("386", ""), p("amd64", "")}
	for _, tc := range []struct {
		want ocispec.Platform
		idx  int
	}{
		{*p("amd64", ""), 6},
		{*p("386", ""), 5},
		// arm without a variant is arm/v7: the first entry that is.
		{*p("arm", "v7"), 2},
		{*p("arm", "v6"), 3},
		{*p("arm", "v8"), 2},
	} {
		if i, ok := Select(tc.want, have); !ok || i != tc.idx {
			t.Errorf("Select(%+v) = %d, %v; want %d", tc.want, i, ok, tc.idx)
		}
	}
	if _, ok := Select(*p("s390x", ""), have); ok {
		t.Error("s390x selected")
	}
}
