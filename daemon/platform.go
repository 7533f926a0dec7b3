package daemon

import (
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
)

// checkImagePlatform refuses, as Docker does (404: the image asked for, of
// that platform, is not here), a create whose ?platform= the image found
// does not provide (platform.Matches: an image the requested CPU runs
// serves it).
func checkImagePlatform(ref string, img ocispec.Platform, spec string) error {
	if spec == "" {
		return nil
	}
	want, err := platform.Parse(spec)
	if err != nil {
		return err
	}
	return checkPlatform(ref, img, want)
}

// checkPlatform is checkImagePlatform for a platform already read (the
// JSON ?platform= of inspect and save).
func checkPlatform(ref string, img, want ocispec.Platform) error {
	if platform.Matches(want, img) {
		return nil
	}
	return errdefs.NotFound(fmt.Errorf("image with reference %s was found but its platform (%s) does not match the specified platform (%s)",
		ref, platform.Format(platform.Normalize(img)), platform.Format(platform.Normalize(want))))
}
