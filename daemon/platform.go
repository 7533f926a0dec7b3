package daemon

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

// platformPart is what each of os/arch/variant may be (as Docker's parser
// has it); case is not significant.
var platformPart = regexp.MustCompile(`^[a-z0-9_-]+$`)

// parsePlatform reads a create's ?platform=: "os[/arch[/variant]]", or an
// architecture alone (on this host's OS). Names are normalised as Docker
// normalises them (x86_64 is amd64, aarch64 arm64, ...).
func parsePlatform(s string) (ocispec.Platform, error) {
	parts := strings.Split(strings.ToLower(s), "/")
	if len(parts) > 3 {
		return ocispec.Platform{}, errdefs.InvalidParameter(fmt.Errorf("%q: cannot parse platform specifier: invalid argument", s))
	}
	for _, p := range parts {
		if !platformPart.MatchString(p) {
			return ocispec.Platform{}, errdefs.InvalidParameter(fmt.Errorf("%q: invalid platform specifier component %q: invalid argument", s, p))
		}
	}
	var p ocispec.Platform
	switch len(parts) {
	case 1:
		if parts[0] == "linux" || parts[0] == "windows" || parts[0] == "darwin" || parts[0] == "freebsd" {
			p = ocispec.Platform{OS: parts[0], Architecture: runtime.GOARCH}
		} else {
			p = ocispec.Platform{OS: runtime.GOOS, Architecture: parts[0]}
		}
	case 2:
		p = ocispec.Platform{OS: parts[0], Architecture: parts[1]}
	case 3:
		p = ocispec.Platform{OS: parts[0], Architecture: parts[1], Variant: parts[2]}
	}
	return normalisePlatform(p), nil
}

// normalisePlatform gives an architecture and variant their usual names.
func normalisePlatform(p ocispec.Platform) ocispec.Platform {
	p.OS = strings.ToLower(p.OS)
	p.Architecture = strings.ToLower(p.Architecture)
	p.Variant = strings.ToLower(p.Variant)
	switch p.Architecture {
	case "x86_64", "x86-64":
		p.Architecture, p.Variant = "amd64", ""
	case "i386", "i486", "i586", "i686":
		p.Architecture = "386"
	case "aarch64", "arm64":
		p.Architecture = "arm64"
		if p.Variant == "8" || p.Variant == "v8" {
			p.Variant = ""
		}
	case "armhf":
		p.Architecture, p.Variant = "arm", "v7"
	case "armel":
		p.Architecture, p.Variant = "arm", "v6"
	case "arm":
		switch p.Variant {
		case "", "7":
			p.Variant = "v7"
		case "5", "6", "8":
			p.Variant = "v" + p.Variant
		}
	}
	return p
}

// platformMatches reports whether an image of platform img serves a
// request for want: the same OS and architecture, and the same variant
// when the request names one.
func platformMatches(want, img ocispec.Platform) bool {
	want, img = normalisePlatform(want), normalisePlatform(img)
	return want.OS == img.OS && want.Architecture == img.Architecture &&
		(want.Variant == "" || want.Variant == img.Variant)
}

func formatPlatform(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// checkImagePlatform refuses, as Docker does (404: the image asked for, of
// that platform, is not here), a create whose ?platform= the image found
// does not provide.
func checkImagePlatform(ref string, img ocispec.Platform, platform string) error {
	if platform == "" {
		return nil
	}
	want, err := parsePlatform(platform)
	if err != nil {
		return err
	}
	if platformMatches(want, img) {
		return nil
	}
	return errdefs.NotFound(fmt.Errorf("image with reference %s was found but its platform (%s) does not match the specified platform (%s)", ref, formatPlatform(normalisePlatform(img)), formatPlatform(want)))
}
