package image

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// driverDirs lists the graph driver's layer directories.
func (e *env) driverDirs(t *testing.T) []string {
	t.Helper()
	ids, err := e.drv.List()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	return ids
}

// layerFiles lists layerdb's files.
func (e *env) layerFiles(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.root, "image", "layerdb", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range ents {
		out = append(out, en.Name())
	}
	return out
}

// What a crash leaves at each step of adding or removing a layer is
// undone at the next open; what was committed stays intact.
func TestRecoverInterruptedLayers(t *testing.T) {
	for _, driver := range []string{"overlay2", "vfs"} {
		t.Run(driver, func(t *testing.T) {
			e := newEnv(t, driver)
			s := e.store
			keep, err := s.Import(ctx, bytes.NewReader(mkTar(tarFile{"kept", "yes"})), "keep", ImportOptions{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreateRWLayer("c1", keep.ID); err != nil {
				t.Fatal(err)
			}
			want := e.driverDirs(t)
			wantFiles := e.layerFiles(t)

			// A layer applied in part (killed during extraction).
			if err := e.drv.Create("halfapplied", ""); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(e.drv.Diff("halfapplied"), "part"), []byte("x"), 0o644)
			// A layer committed whose image never was (killed between the
			// layer and the image config).
			if _, err := s.createLayer(ctx, "load", "", "", bytes.NewReader(mkTar(tarFile{"lone", "l"}))); err != nil {
				t.Fatal(err)
			}
			// A replay record renamed into place without its metadata.
			os.WriteFile(filepath.Join(e.root, "image", "layerdb", "sha256", strings.Repeat("ab", 32)+".tar.gz"), []byte("x"), 0o600)
			// Metadata whose data is gone, and a layer whose parent is gone.
			ghost := layer{ChainID: digest.FromString("ghost"), DiffID: digest.FromString("ghost"), CacheID: "nosuchdir"}
			os.WriteFile(s.layerMeta(ghost.ChainID), mustJSON(ghost), 0o600)
			if err := e.drv.Create("orphanchild", ""); err != nil {
				t.Fatal(err)
			}
			child := layer{ChainID: digest.FromString("child"), DiffID: digest.FromString("c"), Parent: digest.FromString("gone"), CacheID: "orphanchild"}
			os.WriteFile(s.layerMeta(child.ChainID), mustJSON(child), 0o600)
			// Load scratch space.
			os.MkdirAll(filepath.Join(e.root, "image", "tmp", "load-1"), 0o700)

			e.reopen(t)
			if got := e.driverDirs(t); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("driver dirs after recovery %v, want %v", got, want)
			}
			if got := e.layerFiles(t); strings.Join(got, " ") != strings.Join(wantFiles, " ") {
				t.Errorf("layerdb after recovery %v, want %v", got, wantFiles)
			}
			if n := countFiles(t, filepath.Join(e.root, "image", "tmp")); n != 0 {
				t.Errorf("%d entries left in tmp", n)
			}
			// The committed image and the container's layer are intact.
			rootfs, err := e.store.Mount("c1")
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(rootfs, "kept")); err != nil || string(b) != "yes" {
				t.Errorf("kept file: %q %v", b, err)
			}
			if err := e.store.Unmount("c1"); err != nil {
				t.Fatal(err)
			}
			if got, err := e.store.Get("keep"); err != nil || got.ID != keep.ID {
				t.Fatalf("kept image: %v", err)
			}
			if err := e.store.RemoveRWLayer("c1"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.Delete("keep", false, nil); err != nil {
				t.Fatal(err)
			}
			if got := e.driverDirs(t); len(got) != 0 {
				t.Errorf("driver dirs after removing everything: %v", got)
			}
		})
	}
}

// A removal killed after the metadata went leaves data that nothing
// names: it goes at the next open.
func TestRecoverInterruptedRemoval(t *testing.T) {
	e := newEnv(t, "")
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"f", "x"})), "x", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As if killed between the image config's removal and the layers'.
	os.Remove(filepath.Join(e.root, "image", "imagedb", "sha256", img.ID.Encoded()))
	// And a layer whose metadata went but whose directory stayed.
	if err := e.drv.Create("removing", ""); err != nil {
		t.Fatal(err)
	}
	e.reopen(t)
	if _, err := e.store.Get("x"); err == nil {
		t.Fatal("removed image came back")
	}
	if got := e.driverDirs(t); len(got) != 0 {
		t.Errorf("driver dirs left: %v", got)
	}
	if got := e.layerFiles(t); len(got) != 0 {
		t.Errorf("layer files left: %v", got)
	}
	b, _ := os.ReadFile(filepath.Join(e.root, "image", "repositories.json"))
	if strings.Contains(string(b), img.ID.String()) {
		t.Errorf("stale tag kept on disk: %s", b)
	}
}

// A RW layer record whose image layer is gone keeps the container's data
// (it can still be removed); metadata that cannot be read stops every
// removal at that open, since what it names is unknown.
func TestRecoverKeepsWhatItCannotJudge(t *testing.T) {
	e := newEnv(t, "")
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"f", "x"})), "x", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateRWLayer("c1", img.ID); err != nil {
		t.Fatal(err)
	}
	// The image's layer metadata becomes unreadable (EISDIR stands for an
	// I/O error).
	meta := e.store.layerMeta(img.Layers[0])
	saved, _ := os.ReadFile(meta)
	os.Remove(meta)
	os.Mkdir(meta, 0o700)
	if err := e.drv.Create("orphan", ""); err != nil {
		t.Fatal(err)
	}
	e.reopen(t)
	if got := e.driverDirs(t); len(got) != 3 {
		t.Fatalf("with unreadable metadata, driver dirs %v: want all 3 kept", got)
	}
	// With the metadata readable again, only the orphan goes.
	os.Remove(meta)
	os.WriteFile(meta, saved, 0o600)
	e.reopen(t)
	if got := e.driverDirs(t); len(got) != 2 {
		t.Fatalf("driver dirs %v, want the image's and c1's", got)
	}

	// Now the image layer is lost for good: c1's layer stays, removable.
	if _, err := e.store.Delete("x", true, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(meta)
	e.reopen(t)
	if got := e.driverDirs(t); len(got) != 1 || got[0] != "c1" {
		t.Fatalf("driver dirs %v, want c1's", got)
	}
	if _, err := e.store.Mount("c1"); err == nil {
		t.Error("mounted a RW layer whose image layer is gone")
		e.store.Unmount("c1")
	}
	if err := e.store.RemoveRWLayer("c1"); err != nil {
		t.Fatal(err)
	}
	if got := e.driverDirs(t); len(got) != 0 {
		t.Fatalf("driver dirs %v after removal", got)
	}
}

// A load killed between its image config and its tags is finished at the
// next open; one killed before the config leaves neither image nor tags.
func TestRecoverTagIntents(t *testing.T) {
	e := newEnv(t, "")
	old, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"old", "o"})), "app:v1", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As registerImage leaves it at load-before-tag: intent, config, no tag.
	img, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"new", "n"})), "", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(e.store.intentPath(img.ID), mustJSON(tagIntent{Image: img.ID, Tags: []string{"app:v1", "app:latest"}}), 0o600)
	// As it leaves it at load-before-image-config: an intent only.
	never := digest.FromString("never committed")
	os.WriteFile(e.store.intentPath(never), mustJSON(tagIntent{Image: never, Tags: []string{"other:v1"}}), 0o600)

	e.reopen(t)
	for _, ref := range []string{"app:v1", "app:latest"} {
		if got, err := e.store.Get(ref); err != nil || got.ID != img.ID {
			t.Errorf("%s after recovery: %v", ref, err)
		}
	}
	if _, err := e.store.Get("other:v1"); err == nil {
		t.Error("the tag of an image never committed was set")
	}
	if got, err := e.store.Get(old.ID.String()); err != nil || len(got.RepoTags) != 0 {
		t.Errorf("the old image keeps %v (%v); the tag moved", got.RepoTags, err)
	}
	if n := countFiles(t, filepath.Join(e.root, "image", "intents")); n != 0 {
		t.Errorf("%d intents left", n)
	}
	// The tags were saved, not only applied in memory.
	e.reopen(t)
	if got, err := e.store.Get("app:latest"); err != nil || got.ID != img.ID {
		t.Errorf("app:latest after a second open: %v", err)
	}
}
