// Package platform reads, normalises and compares image platforms
// (os/architecture/variant) as the Engine API has them: the specifier
// strings of ?platform= ("linux", "arm64", "linux/arm/v7") and the JSON
// form newer API versions send.
//
// The specifier grammar and the error texts are those Docker's clients and
// tests see (Docker parses with containerd's platforms package, which is
// not a dependency of this module).
package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

var (
	// osPart is the first component: an OS, optionally with a version in
	// parentheses ("windows(10.0.17763)").
	osPart = regexp.MustCompile(`^([A-Za-z0-9_-]+)(?:\(([A-Za-z0-9_.-]*)\))?$`)
	// part is any later component (architecture, variant).
	part = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// knownOS and knownArch decide what a specifier of one component names:
// an OS (on this host's architecture) or an architecture (on this host's
// OS). They are Go's GOOS and GOARCH values.
var knownOS = map[string]bool{
	"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true, "hurd": true,
	"illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true,
	"openbsd": true, "plan9": true, "solaris": true, "wasip1": true, "windows": true, "zos": true,
}

var knownArch = map[string]bool{
	"386": true, "amd64": true, "amd64p32": true, "arm": true, "armbe": true, "arm64": true,
	"arm64be": true, "loong64": true, "mips": true, "mipsle": true, "mips64": true, "mips64le": true,
	"mips64p32": true, "mips64p32le": true, "ppc": true, "ppc64": true, "ppc64le": true,
	"riscv": true, "riscv64": true, "s390": true, "s390x": true, "sparc": true, "sparc64": true,
	"wasm": true,
}

func invalid(format string, args ...any) error {
	return errdefs.InvalidParameter(fmt.Errorf(format, args...))
}

// ErrOSNotSupported is an image platform whose OS this engine cannot run
// (anything but linux), in Docker's words.
var ErrOSNotSupported = errors.New("operating system is not supported")

// Default is the platform this engine runs: linux on the host's
// architecture (any variant of it).
func Default() ocispec.Platform {
	return ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

// CheckOS refuses (InvalidParameter) an OS this engine cannot run.
func CheckOS(os string) error {
	if strings.ToLower(os) != "linux" {
		return errdefs.InvalidParameter(ErrOSNotSupported)
	}
	return nil
}

// Parse reads a specifier: "os[(osversion)][/arch[/variant]]", or one
// component that is either a known OS (on this host's architecture) or a
// known architecture (on linux). Names are normalised (Normalize); an OS
// or architecture given with another component need not be a known one.
// Errors are InvalidParameter.
func Parse(s string) (ocispec.Platform, error) {
	if strings.Contains(s, "*") {
		return ocispec.Platform{}, invalid("%q: wildcards not yet supported: invalid argument", s)
	}
	parts := strings.SplitN(s, "/", 4)
	m := osPart.FindStringSubmatch(parts[0])
	if m == nil {
		return ocispec.Platform{}, invalid("%q is an invalid OS component of %q: OSAndVersion specifier component must match %q: invalid argument", parts[0], s, osPart.String())
	}
	for _, p := range parts[1:] {
		if !part.MatchString(p) {
			return ocispec.Platform{}, invalid("%q is an invalid component of %q: platform specifier component must match %q: invalid argument", p, s, part.String())
		}
	}
	p := ocispec.Platform{OS: normalizeOS(m[1]), OSVersion: m[2]}
	switch len(parts) {
	case 1:
		if knownOS[p.OS] {
			p.Architecture = Default().Architecture
			return p, nil
		}
		arch, variant := normalizeArch(parts[0], "")
		if !knownArch[arch] {
			return ocispec.Platform{}, invalid("%q: unknown operating system or architecture: invalid argument", s)
		}
		return ocispec.Platform{OS: "linux", Architecture: arch, Variant: impliedVariant(arch, variant)}, nil
	case 2:
		arch, variant := normalizeArch(parts[1], "")
		p.Architecture, p.Variant = arch, impliedVariant(arch, variant)
		return p, nil
	case 3:
		p.Architecture, p.Variant = normalizeArch(parts[1], parts[2])
		return p, nil
	}
	return ocispec.Platform{}, invalid("%q: cannot parse platform specifier: invalid argument", s)
}

// impliedVariant drops the variant Normalize gives plain "arm" (v7), so
// that "linux/arm" asks for any arm rather than for v7 in particular.
func impliedVariant(arch, variant string) string {
	if arch == "arm" && variant == "v7" {
		return ""
	}
	return variant
}

// Decode reads the JSON form of ?platform= (API 1.48+ for save and load,
// 1.49+ for inspect): both OS and architecture are required.
func Decode(s string) (ocispec.Platform, error) {
	var p ocispec.Platform
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return ocispec.Platform{}, invalid("failed to parse platform: %w", err)
	}
	if p.OS == "" && p.Architecture == "" && (p.Variant != "" || p.OSVersion != "" || len(p.OSFeatures) > 0) {
		return ocispec.Platform{}, invalid("optional platform fields provided, but OS and Architecture are missing")
	}
	if p.OS == "" || p.Architecture == "" {
		return ocispec.Platform{}, invalid("both OS and Architecture must be provided")
	}
	return p, nil
}

func normalizeOS(os string) string {
	os = strings.ToLower(os)
	if os == "macos" {
		return "darwin"
	}
	return os
}

// normalizeArch gives an architecture and variant their usual names:
// x86_64 is amd64, aarch64 arm64 (v8 being its only variant so far),
// armhf arm/v7, and a bare variant number gains its "v".
func normalizeArch(arch, variant string) (string, string) {
	arch, variant = strings.ToLower(arch), strings.ToLower(variant)
	switch arch {
	case "i386", "i486", "i586", "i686":
		return "386", ""
	case "x86_64", "x86-64", "amd64":
		if variant == "v1" {
			variant = ""
		}
		return "amd64", variant
	case "aarch64", "arm64":
		if variant == "8" || variant == "v8" || variant == "v8.0" {
			variant = ""
		}
		return "arm64", variant
	case "armhf":
		return "arm", "v7"
	case "armel":
		return "arm", "v6"
	case "arm":
		switch variant {
		case "", "7":
			variant = "v7"
		case "5", "6", "8":
			variant = "v" + variant
		}
		return "arm", variant
	}
	return arch, variant
}

// Normalize gives p's names their canonical form.
func Normalize(p ocispec.Platform) ocispec.Platform {
	p.OS = normalizeOS(p.OS)
	p.Architecture, p.Variant = normalizeArch(p.Architecture, p.Variant)
	return p
}

// Matches reports whether an image of platform have serves a request for
// want: the same OS and architecture, and the same variant when want
// names one.
func Matches(want, have ocispec.Platform) bool {
	named := want.Variant != ""
	want, have = Normalize(want), Normalize(have)
	return want.OS == have.OS && want.Architecture == have.Architecture &&
		(!named || want.Variant == have.Variant)
}

// Format is "os/arch[/variant]".
func Format(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}
