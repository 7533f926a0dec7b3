package image

import (
	"bytes"
	"testing"
)

// Once the writable layer of a container the daemon has no record of is
// discarded (at a restart), rmi frees its image's layers.
func TestDiscardedRWLayerFreesImage(t *testing.T) {
	e := newEnv(t, "")
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"f", "x"})), "x", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"known", "leftover"} {
		if err := e.store.CreateRWLayer(c, img.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.reopen(t)
	if err := e.store.DiscardRWLayer("leftover"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Delete("x", false, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.driverDirs(t); len(got) != 2 {
		t.Fatalf("driver dirs %v: want the image's, held by \"known\", and known's", got)
	}
	if err := e.store.RemoveRWLayer("known"); err != nil {
		t.Fatal(err)
	}
	if got := e.driverDirs(t); len(got) != 0 {
		t.Errorf("driver dirs left after the last container went: %v", got)
	}
}
