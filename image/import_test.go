package image

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

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

// An import of an empty tar, or of nothing at all, is an image without
// files, as Docker makes it.
func TestImportEmpty(t *testing.T) {
	e := newEnv(t, "vfs")
	for _, in := range [][]byte{mkTar(), nil} {
		if _, err := e.store.Import(context.Background(), bytes.NewReader(in), "empty:x", ImportOptions{}, nil); err != nil {
			t.Fatalf("import of %d bytes: %v", len(in), err)
		}
	}
}

// The image is of the platform the import names (any architecture: the
// image is only data), of this engine's by default, and never of an OS
// this engine cannot run.
func TestImportPlatform(t *testing.T) {
	e := newEnv(t, "vfs")
	ctx := context.Background()
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar()), "plat:default", ImportOptions{}, nil)
	if err != nil || img.Config.OS != "linux" || img.Config.Architecture != runtime.GOARCH || img.Config.Variant != "" {
		t.Fatalf("default platform: %+v %v", img, err)
	}
	want := ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}
	img, err = e.store.Import(ctx, bytes.NewReader(mkTar()), "plat:armv6", ImportOptions{Platform: want}, nil)
	if err != nil || img.Config.OS != "linux" || img.Config.Architecture != "arm" || img.Config.Variant != "v6" {
		t.Fatalf("linux/arm/v6: %+v %v", img, err)
	}
	if got := e.store.InspectImage(img); got.Os != "linux" || got.Architecture != "arm" || got.Variant != "v6" {
		t.Errorf("inspect: %s/%s/%s", got.Os, got.Architecture, got.Variant)
	}
	before := len(e.store.List())
	_, err = e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"f", "x"})), "plat:darwin", ImportOptions{Platform: ocispec.Platform{OS: "darwin", Architecture: "arm64"}}, nil)
	if !errdefs.IsInvalidParameter(err) || err.Error() != "operating system is not supported" {
		t.Fatalf("darwin: %v", err)
	}
	if n := len(e.store.List()); n != before {
		t.Errorf("a refused import left an image: %d images, was %d", n, before)
	}
	if _, err := e.store.Get("plat:darwin"); !errdefs.IsNotFound(err) {
		t.Errorf("refused import is tagged: %v", err)
	}
}

// A saved image's config and layers carry its creation time (to the
// second, truncated), as Docker writes them.
func TestSaveTimes(t *testing.T) {
	e := newEnv(t, "vfs")
	ctx := context.Background()
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"f", "x"})), "times:v1", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	created := img.Created.Truncate(time.Second)
	var buf bytes.Buffer
	if err := e.store.Save(ctx, []string{"times:v1"}, &buf); err != nil {
		t.Fatal(err)
	}
	times := map[string]time.Time{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		times[h.Name] = h.ModTime
	}
	for _, name := range []string{"blobs/sha256/" + img.ID.Encoded(), "blobs/sha256/" + img.Layers[0].Encoded()} {
		if got, ok := times[name]; !ok || !got.Equal(created) {
			t.Errorf("%s: mtime %v, want %v (created %v)", name, got, created, img.Created)
		}
	}
	if got := times["manifest.json"]; !got.Equal(time.Unix(0, 0)) {
		t.Errorf("manifest.json: mtime %v", got)
	}
}

// Docker refuses a tag whose name is a digest algorithm ("sha256:x" reads
// as an ID prefix), and a reference that is neither an ID nor a name.
func TestTagAndReferenceRefusals(t *testing.T) {
	e := newEnv(t, "vfs")
	ctx := context.Background()
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar()), "ref:v1", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"sha256:sometag", "sha256", "docker.io/library/sha256:x"} {
		err := e.store.Tag("ref:v1", ref)
		if !errdefs.IsInvalidParameter(err) || err.Error() != "refusing to create an ambiguous tag using digest algorithm as name" {
			t.Errorf("Tag %q: %v", ref, err)
		}
	}
	if err := e.store.Tag("ref:v1", "sha256x:ok"); err != nil {
		t.Errorf("a name that only starts like an algorithm: %v", err)
	}
	_, err = e.store.Get("ref:" + img.ID.String())
	if !errdefs.IsInvalidParameter(err) || err.Error() != "invalid reference format" {
		t.Errorf("name:sha256:<id>: %v", err)
	}
	_, err = e.store.Get("ref:" + img.ID.Encoded())
	if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "No such image: ref:"+img.ID.Encoded()) {
		t.Errorf("name:<id>: %v", err)
	}
	for _, ref := range []string{img.ID.String(), img.ID.Encoded(), img.ID.Encoded()[:12], "sha256:" + img.ID.Encoded()[:12], "ref:v1"} {
		if got, err := e.store.Get(ref); err != nil || got.ID != img.ID {
			t.Errorf("Get(%q): %v", ref, err)
		}
	}
}
