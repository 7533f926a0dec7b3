package distribution

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/distribution/reference"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ParsePullRef combines POST /images/create's fromImage and tag as
// Docker does: unqualified names are Docker Hub's ("busybox" is
// docker.io/library/busybox); tag may be a tag or a digest and wins over
// one in fromImage; a bare name without tag means every tag (pull -a).
func ParsePullRef(fromImage, tag string) (named reference.Named, allTags bool, err error) {
	named, err = reference.ParseNormalizedNamed(strings.TrimSpace(fromImage))
	if err != nil {
		return nil, false, errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %w", err))
	}
	if tag != "" {
		named = reference.TrimNamed(named)
		if d, derr := digest.Parse(tag); derr == nil {
			named, err = reference.WithDigest(named, d)
		} else {
			named, err = reference.WithTag(named, tag)
		}
		if err != nil {
			return nil, false, errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %w", err))
		}
		return named, false, nil
	}
	if reference.IsNameOnly(named) {
		return named, true, nil
	}
	return named, false, nil
}

// refString is what a reference is called in the tag store and messages:
// "busybox:latest", "localhost:5000/a@sha256:...".
func refString(named reference.Named) string { return reference.FamiliarString(named) }

// tagOrDigest is the ID of the "Pulling from" line: the tag, or the digest.
func tagOrDigest(named reference.Named) string {
	if d, ok := named.(reference.Digested); ok {
		return d.Digest().String()
	}
	if t, ok := named.(reference.Tagged); ok {
		return t.Tag()
	}
	return "latest"
}

// Known operating systems and architectures, as containerd's platforms
// package knows them, for the validation Docker does.
var (
	knownOS   = map[string]bool{"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true, "hurd": true, "illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true, "openbsd": true, "plan9": true, "solaris": true, "windows": true, "zos": true, "wasip1": true}
	archAlias = map[string]string{"x86_64": "amd64", "x86-64": "amd64", "i386": "386", "aarch64": "arm64", "armhf": "arm", "armel": "arm"}
	knownArch = map[string]bool{"386": true, "amd64": true, "amd64p32": true, "arm": true, "armbe": true, "arm64": true, "arm64be": true, "ppc64": true, "ppc64le": true, "loong64": true, "mips": true, "mipsle": true, "mips64": true, "mips64le": true, "mips64p32": true, "mips64p32le": true, "ppc": true, "riscv": true, "riscv64": true, "s390": true, "s390x": true, "sparc": true, "sparc64": true, "wasm": true}
)

// HostPlatform is the platform an image must be for to run here.
func HostPlatform() v1.Platform {
	p := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	switch runtime.GOARCH {
	case "arm64":
		p.Variant = "v8"
	case "arm":
		p.Variant = "v7"
	}
	return p
}

// ParsePlatform parses os[/arch[/variant]] (or a lone arch) as Docker
// does; "" is the host's platform. Anything unknown is Docker's 400
// "unknown operating system or architecture".
func ParsePlatform(s string) (v1.Platform, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return HostPlatform(), nil
	}
	bad := errdefs.InvalidParameter(fmt.Errorf("%q: unknown operating system or architecture: invalid argument", s))
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return v1.Platform{}, bad
	}
	var p v1.Platform
	switch {
	case len(parts) == 1 && knownOS[parts[0]]:
		p = v1.Platform{OS: parts[0], Architecture: runtime.GOARCH}
	case len(parts) == 1:
		arch := normArch(parts[0])
		if !knownArch[arch] {
			return v1.Platform{}, bad
		}
		p = v1.Platform{OS: "linux", Architecture: arch}
	default:
		if !knownOS[parts[0]] {
			return v1.Platform{}, bad
		}
		arch := normArch(parts[1])
		if !knownArch[arch] {
			return v1.Platform{}, bad
		}
		p = v1.Platform{OS: parts[0], Architecture: arch}
		if len(parts) == 3 {
			p.Variant = parts[2]
		}
	}
	if p.Architecture == "arm64" && p.Variant == "" {
		p.Variant = "v8"
	}
	return p, nil
}

func normArch(a string) string {
	if n, ok := archAlias[a]; ok {
		return n
	}
	return a
}

// platformMatches says whether an image or index entry for have can
// serve want: OS and architecture must agree; a variant only when both
// name one (arm64 images seldom say v8).
func platformMatches(have *v1.Platform, want v1.Platform) bool {
	if have == nil {
		return false
	}
	if have.OS != want.OS || normArch(have.Architecture) != want.Architecture {
		return false
	}
	hv := have.Variant
	if want.Architecture == "arm64" && hv == "" {
		hv = "v8"
	}
	return want.Variant == "" || hv == "" || hv == want.Variant
}

// selectManifest picks the index entry for want: the first that matches
// exactly, ahead of one without a variant.
func selectManifest(idx *v1.IndexManifest, want v1.Platform) (v1.Descriptor, bool) {
	var fallback *v1.Descriptor
	for i := range idx.Manifests {
		d := idx.Manifests[i]
		if !platformMatches(d.Platform, want) {
			continue
		}
		if want.Variant == "" || d.Platform.Variant == want.Variant {
			return d, true
		}
		if fallback == nil {
			fallback = &idx.Manifests[i]
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return v1.Descriptor{}, false
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}
