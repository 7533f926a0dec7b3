package image

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
)

// A pull prepares its layers on top of each other before any is
// complete, extracts them (at once on overlay2, in order on vfs) and
// commits them in order; nothing shows in layerdb before a commit, and
// a layer discarded leaves nothing.
func TestPendingLayers(t *testing.T) {
	for _, driver := range []string{"overlay2", "vfs"} {
		t.Run(driver, func(t *testing.T) {
			e := newEnv(t, driver)
			if got := e.store.IndependentLayers(); got != (driver == "overlay2") {
				t.Fatalf("IndependentLayers = %v", got)
			}
			ctx := context.Background()
			d1, d2 := digest.FromBytes(layer1), digest.FromBytes(layer2)
			chains, _ := ChainIDs([]digest.Digest{d1, d2})
			p1, err := e.store.PrepareLayer("", nil, d1)
			if err != nil {
				t.Fatal(err)
			}
			p2, err := e.store.PrepareLayer("", p1, d2)
			if err != nil {
				t.Fatal(err)
			}
			if p2.ChainID() != chains[1] {
				t.Fatalf("chain %s, want %s", p2.ChainID(), chains[1])
			}
			order := []*PendingLayer{p1, p2}
			data := [][]byte{layer1, layer2}
			if e.store.IndependentLayers() {
				// The layer on top first: it needs nothing of its parent's content.
				order, data = []*PendingLayer{p2, p1}, [][]byte{layer2, layer1}
			}
			for i, p := range order {
				if err := p.Extract(ctx, bytes.NewReader(gz(data[i]))); err != nil {
					t.Fatal(err)
				}
			}
			if ents, _ := filepath.Glob(filepath.Join(e.root, "image", "layerdb", "sha256", "*")); len(ents) > 0 {
				t.Fatalf("layerdb before any commit: %v", ents)
			}
			if _, err := e.store.CommitLayer(p2); err == nil {
				t.Fatal("a layer committed before its parent")
			}
			for _, p := range []*PendingLayer{p1, p2} {
				c, err := e.store.CommitLayer(p)
				if err != nil || c != p.ChainID() || !p.Registered() {
					t.Fatalf("commit: %s %v registered=%v", c, err, p.Registered())
				}
				p.Discard() // only closes: the layer is the store's
			}
			if !e.store.AcquireLayer(chains[1]) {
				t.Fatal("committed layer missing")
			}
			e.store.ReleaseLayers([]digest.Digest{chains[0], chains[1], chains[1]}) // released top first

			// Wrong content: refused, and its discard leaves nothing.
			p, err := e.store.PrepareLayer("", nil, d2)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Extract(ctx, bytes.NewReader(layer1)); err == nil {
				t.Fatal("content not matching its diff ID accepted")
			}
			p.Discard()
			if ents, _ := os.ReadDir(filepath.Join(e.root, "image", "tmp")); len(ents) > 0 {
				t.Fatalf("scratch files left: %v", ents)
			}
			if ids, _ := e.drv.List(); len(ids) != 0 {
				t.Fatalf("layer directories left: %v", ids)
			}
		})
	}
}
