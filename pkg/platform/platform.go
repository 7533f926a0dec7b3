// Package platform reads, normalises and compares image platforms
// (os/architecture/variant) as the Engine API has them: the specifier
// strings of ?platform= ("linux", "arm64", "linux/arm/v7") and the JSON
// form newer API versions send.
//
// It is a thin layer over github.com/containerd/platforms, which Docker
// parses and matches with, so that the grammar, the normalisation and the
// error texts are the ones Docker's clients and tests see; this package
// only adds the engine's error classes and its matching rule.
package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/containerd/platforms"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

func invalid(format string, args ...any) error {
	return errdefs.InvalidParameter(fmt.Errorf(format, args...))
}

// ErrOSNotSupported is an image platform whose OS this engine cannot run
// (anything but linux), in Docker's words.
var ErrOSNotSupported = errors.New("operating system is not supported")

// Default is the platform this engine runs: linux on the host's
// architecture, with the CPU's variant on arm.
func Default() ocispec.Platform {
	return platforms.DefaultSpec()
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
// known architecture (on linux). The result is normalised. Errors are
// InvalidParameter and read as Docker's.
func Parse(s string) (ocispec.Platform, error) {
	p, err := platforms.Parse(s)
	if err != nil {
		return ocispec.Platform{}, errdefs.InvalidParameter(err)
	}
	return p, nil
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

// Normalize gives p's names their canonical form (x86_64 is amd64,
// aarch64 arm64, arm without a variant arm/v7).
func Normalize(p ocispec.Platform) ocispec.Platform {
	return platforms.Normalize(p)
}

// Matches reports whether an image of platform have serves a request for
// want. An image a CPU of want runs natively matches (platforms.Only:
// arm/v6 serves arm/v7, 386 serves amd64, arm64 serves arm64/v8); so does
// one that names no variant, on want's OS and architecture, because image
// configs often leave the variant out.
func Matches(want, have ocispec.Platform) bool {
	if platforms.Only(want).Match(have) {
		return true
	}
	if have.Variant != "" {
		return false
	}
	// Normalize would give have a default variant (arm's v7), which is
	// what it does not say; only OS and architecture are compared.
	w, h := platforms.Normalize(want), platforms.Normalize(have)
	return w.OS == h.OS && w.Architecture == h.Architecture
}

// Select picks, of candidates (nil ones are not platforms), the one that
// serves want best: Matches decides which serve it, and the order of
// platforms.Only (the exact platform first, then older variants) which is
// best; of equals the first. It reports false when none matches.
func Select(want ocispec.Platform, candidates []*ocispec.Platform) (int, bool) {
	order := platforms.Only(want)
	best := -1
	for i, c := range candidates {
		if c == nil || !Matches(want, *c) {
			continue
		}
		if best < 0 || order.Less(*c, *candidates[best]) {
			best = i
		}
	}
	return best, best >= 0
}

// Format is "os/arch[/variant]".
func Format(p ocispec.Platform) string {
	return platforms.Format(p)
}
