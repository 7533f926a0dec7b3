package image

import (
	"bytes"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The daemon releases the RW layers of containers it does not know; their
// image's layers are then freed by rmi.
func TestReleaseRWLayers(t *testing.T) {
	e := newEnv(t, "")
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"f", "x"})), "x", ocispec.ImageConfig{}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"known", "leftover"} {
		if err := e.store.CreateRWLayer(c, img.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(e.store.RWLayers(), " "); got != "known leftover" {
		t.Fatalf("RWLayers = %q", got)
	}
	e.reopen(t)
	got := e.store.ReleaseRWLayers(func(id string) bool { return id == "known" })
	if len(got) != 1 || got[0] != "leftover" {
		t.Fatalf("released %v", got)
	}
	if err := e.store.RemoveRWLayer("known"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Delete("x", false, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.driverDirs(t); len(got) != 0 {
		t.Errorf("driver dirs left after rmi: %v", got)
	}
}
