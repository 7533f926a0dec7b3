//go:build integration

package integrationcli

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// docker import --platform: the image is of that platform; a platform of
// an OS this engine cannot run, or that is no platform at all, is refused
// with a 400 and imports nothing. Inspect and save with ?platform= refuse
// an image of another platform as Docker's graphdriver store does.
func TestImagePlatform(t *testing.T) {
	empty := string(tarOf(t))
	r := shared.CLIStdin(empty, "import", "--platform", "linux/sparc64", "-", "it-plat:sparc")
	if r.Code != 0 {
		t.Fatalf("import --platform linux/sparc64: %s", r)
	}
	defer shared.CLI("rmi", "it-plat:sparc")
	if out := shared.MustCLI(t, "image", "inspect", "--format", "{{.Os}}/{{.Architecture}}", "it-plat:sparc"); out != "linux/sparc64" {
		t.Fatalf("imported platform: %q", out)
	}
	for platform, msg := range map[string]string{
		"macos/arm64": "operating system is not supported",
		"nintendo64":  "unknown operating system or architecture",
		"/":           "is an invalid OS component",
	} {
		r := shared.CLIStdin(empty, "import", "--platform", platform, "-", "it-plat:refused")
		if r.Code == 0 || !strings.Contains(r.Stderr, "Error response from daemon") || !strings.Contains(r.Stderr, msg) {
			t.Errorf("import --platform %q: %s", platform, r)
		}
		if id := imageID(shared, "it-plat:refused"); id != "" {
			t.Fatalf("a refused import left an image: %s", id)
		}
	}

	ctx := context.Background()
	c := shared.Client(t)
	defer c.Close()
	sparc := ocispec.Platform{OS: "linux", Architecture: "sparc64"}
	native := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if insp, err := c.ImageInspect(ctx, "it-plat:sparc", client.ImageInspectWithPlatform(&sparc)); err != nil || insp.Architecture != "sparc64" {
		t.Errorf("inspect with its own platform: %v", err)
	}
	_, err := c.ImageInspect(ctx, "it-plat:sparc", client.ImageInspectWithPlatform(&native))
	if !cerrdefs.IsNotFound(err) || !strings.Contains(err.Error(), "image with reference it-plat:sparc was found but its platform (linux/sparc64) does not match") {
		t.Errorf("inspect with another platform: %v", err)
	}
	_, err = c.ImageSave(ctx, []string{"it-plat:sparc"}, client.ImageSaveWithPlatforms(native))
	if !cerrdefs.IsNotFound(err) {
		t.Errorf("save with another platform: %v", err)
	}
	_, err = c.ImageSave(ctx, []string{"it-plat:sparc"}, client.ImageSaveWithPlatforms(native, sparc))
	if !cerrdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "multiple platform parameters not supported") {
		t.Errorf("save with two platforms: %v", err)
	}
	rc, err := c.ImageSave(ctx, []string{"it-plat:sparc"}, client.ImageSaveWithPlatforms(sparc))
	if err != nil {
		t.Fatalf("save with its own platform: %v", err)
	}
	n, _ := io.Copy(io.Discard, rc)
	rc.Close()
	if n == 0 {
		t.Errorf("save with its own platform wrote nothing")
	}
}

// An import answers once the image exists, so a client that does not read
// the answer (moby's tests) finds it at once; and what follows the tar in
// the body does not cost the connection's next request.
func TestImportAnswersWhenDone(t *testing.T) {
	ctx := context.Background()
	c := shared.Client(t)
	defer c.Close()
	for i := range 3 {
		body := io.MultiReader(bytes.NewReader(tarOf(t, [2]string{"f", "x"})), bytes.NewReader(make([]byte, 64<<10)))
		if _, err := c.ImageImport(ctx, imagetypes.ImportSource{Source: body, SourceName: "-"}, "it-import:done", imagetypes.ImportOptions{}); err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
		if _, err := c.ImageInspect(ctx, "it-import:done"); err != nil {
			t.Fatalf("inspect right after import %d: %v", i, err)
		}
	}
	shared.MustCLI(t, "rmi", "it-import:done")
	if strings.Contains(shared.Log(), "invalid concurrent Body.Read") {
		t.Error("the daemon's HTTP server panicked on a connection after an import")
	}
}

// docker save: the image config's time in the archive is the image's
// creation time; tags named after a digest algorithm are refused.
func TestSaveTimesAndAmbiguousTag(t *testing.T) {
	ctx := context.Background()
	c := shared.Client(t)
	defer c.Close()
	insp, err := c.ImageInspect(ctx, "busybox")
	if err != nil {
		t.Fatal(err)
	}
	created, err := time.Parse(time.RFC3339Nano, insp.Created)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.ImageSave(ctx, []string{"busybox"})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	cfgName := "blobs/sha256/" + strings.TrimPrefix(insp.ID, "sha256:")
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == cfgName {
			found = true
			if h.ModTime.Format(time.RFC3339) != created.Format(time.RFC3339) {
				t.Errorf("config mtime %v, image created %v", h.ModTime, created)
			}
		}
	}
	if !found {
		t.Fatalf("no %s in the archive", cfgName)
	}
	err = c.ImageTag(ctx, "busybox", "sha256:sometag")
	if !cerrdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "refusing to create an ambiguous tag using digest algorithm as name") {
		t.Errorf("tag sha256:sometag: %v", err)
	}
}
