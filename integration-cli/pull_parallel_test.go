//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPullConcurrentSameImage runs three pulls of one 5-layer image at
// once, on each storage driver: on overlay2 every layer is extracted as
// its blob streams in and layers are committed in order while the next
// extract, so the pulls race to commit the same layers (a pull whose
// layer another committed first starts again from the store's); on vfs
// layers are spooled and extracted one after the other. Every pull
// succeeds with the same image, and the store is left consistent, with
// no scratch files.
func TestPullConcurrentSameImage(t *testing.T) {
	reg := startRegistry(t, false)
	img, err := random.Image(4<<20, 5)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Addr + "/concurrent/pull:v1"
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	want, _ := img.ConfigName()

	for _, driver := range []string{"overlay2", "vfs"} {
		t.Run(driver, func(t *testing.T) {
			d := NewDaemon(t, "--storage-driver", driver)
			d.Start(t)
			defer d.Cleanup(t)
			for round := 0; round < 2; round++ {
				results := make([]Result, 3)
				var wg sync.WaitGroup
				for i := range results {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						results[i] = d.CLI("pull", ref)
					}(i)
				}
				wg.Wait()
				for _, res := range results {
					if res.Code != 0 || !strings.Contains(res.Stdout, "Digest: ") {
						t.Fatalf("concurrent pull: %s", res)
					}
				}
				if id, _ := inspectImage(t, d, ref); id != want.String() {
					t.Fatalf("pulled %s, want %s", id, want)
				}
				if ents, _ := os.ReadDir(filepath.Join(d.Root, "image", "tmp")); len(ents) > 0 {
					t.Fatalf("scratch files left by the pulls: %v", ents)
				}
				if driver == "overlay2" {
					checkImageStore(t, d)
				}
				// The image's layers work: save reads every one back and
				// checks it against its diff ID.
				if res := d.CLI("save", "-o", filepath.Join(t.TempDir(), "img.tar"), ref); res.Code != 0 {
					t.Fatalf("save: %s", res)
				}
				d.MustCLI(t, "rmi", ref)
			}
		})
	}
}
