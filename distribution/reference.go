package distribution

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
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

// ociPlatform is a go-containerregistry platform as the OCI type
// pkg/platform works on; nil stays nil (an index entry without one).
func ociPlatform(p *v1.Platform) *ocispec.Platform {
	if p == nil {
		return nil
	}
	return &ocispec.Platform{
		OS:           p.OS,
		Architecture: p.Architecture,
		Variant:      p.Variant,
		OSVersion:    p.OSVersion,
		OSFeatures:   p.OSFeatures,
	}
}

// parsePlatform is a pull's ?platform=; "" is the host's platform.
func parsePlatform(s string) (ocispec.Platform, error) {
	if s == "" {
		return platform.Default(), nil
	}
	return platform.Parse(s)
}

// selectManifest picks the index entry that serves want best
// (platform.Select).
func selectManifest(idx *v1.IndexManifest, want ocispec.Platform) (v1.Descriptor, bool) {
	have := make([]*ocispec.Platform, len(idx.Manifests))
	for i, d := range idx.Manifests {
		have[i] = ociPlatform(d.Platform)
	}
	i, ok := platform.Select(want, have)
	if !ok {
		return v1.Descriptor{}, false
	}
	return idx.Manifests[i], true
}
