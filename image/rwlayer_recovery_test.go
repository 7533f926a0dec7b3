package image

import (
	"bytes"
	"os"
	"testing"
)

// A writable layer whose record was never written (a create cut short)
// is found by its container's ID and removed, and so is one with its
// record; the image layer under it stays.
func TestDiscardRWLayer(t *testing.T) {
	for _, driver := range []string{"overlay2", "vfs"} {
		t.Run(driver, func(t *testing.T) {
			e := newEnv(t, driver)
			img, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"a", "a"})), "a", ImportOptions{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.store.CreateRWLayer("withrecord", img.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.Mount("withrecord"); err != nil {
				t.Fatal(err)
			}
			// What a crash between the layer's directory and its record leaves.
			if err := e.drv.CreateRW("norecord", ""); err != nil {
				t.Fatal(err)
			}
			e.reopen(t)
			if ids := e.store.RWLayerIDs(); len(ids) != 1 || ids[0] != "withrecord" {
				t.Fatalf("RW layers %v", ids)
			}
			for _, id := range []string{"withrecord", "norecord", "neverexisted"} {
				if err := e.store.DiscardRWLayer(id); err != nil {
					t.Fatalf("discard %s: %v", id, err)
				}
				if _, err := os.Stat(e.drv.Diff(id)); !os.IsNotExist(err) {
					t.Errorf("layer directory of %s left: %v", id, err)
				}
			}
			if ids := e.store.RWLayerIDs(); len(ids) != 0 {
				t.Errorf("RW layers left: %v", ids)
			}
			// The image's own layer is untouched and can be removed.
			if _, err := e.store.Delete(img.ID.String(), true, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}
