package image

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

var ctx = context.Background()

func TestImportTagLookupDelete(t *testing.T) {
	e := newEnv(t, "")
	s := e.store
	rootfs := mkTar(tarFile{"bin/", ""}, tarFile{"bin/sh", "#!"}, tarFile{"etc/os-release", "ID=test"})

	if _, err := s.Import(ctx, bytes.NewReader(rootfs), "Bad/Name", ImportOptions{}, nil); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("uppercase ref: %v", err)
	}
	var progress bytes.Buffer
	img, err := s.Import(ctx, bytes.NewReader(gz(rootfs)), "busybox", ImportOptions{Config: ocispec.ImageConfig{Cmd: []string{"sh"}}, Comment: "hello"}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if img.ID != digest.FromBytes(img.RawConfig) || len(img.Layers) != 1 || img.Layers[0] != digest.FromBytes(rootfs) {
		t.Fatalf("bad image %+v", img)
	}
	if img.Size != int64(len("#!ID=test")) || img.Config.Architecture == "" || img.Config.OS != "linux" {
		t.Errorf("size %d arch %q os %q", img.Size, img.Config.Architecture, img.Config.OS)
	}
	if !strings.Contains(progress.String(), "Importing") {
		t.Errorf("no progress: %q", progress.String())
	}
	for _, ref := range []string{"busybox", "busybox:latest", "docker.io/library/busybox:latest", img.ID.String(),
		img.ID.Encoded(), img.ID.Encoded()[:1], "sha256:" + img.ID.Encoded()[:5]} {
		got, err := s.Get(ref)
		if err != nil || got.ID != img.ID {
			t.Errorf("Get(%q) = %v", ref, err)
		}
	}
	if _, err := s.Get("nothere"); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "No such image: nothere") {
		t.Errorf("missing: %v", err)
	}

	if err := s.Tag("busybox", "localhost:5000/a/b:t"); err != nil {
		t.Fatal(err)
	}
	if err := s.Tag("busybox", "UPPER"); !errdefs.IsInvalidParameter(err) {
		t.Errorf("bad tag: %v", err)
	}
	if got, _ := s.Get(img.ID.String()); strings.Join(got.RepoTags, ",") != "busybox:latest,localhost:5000/a/b:t" {
		t.Errorf("tags %v", got.RepoTags)
	}
	inspect := s.InspectImage(img)
	if inspect.Config.Cmd[0] != "sh" || inspect.Comment != "hello" || inspect.RootFS.Layers[0] != img.Layers[0].String() ||
		inspect.GraphDriver.Name != "overlay2" || inspect.GraphDriver.Data["UpperDir"] == "" {
		t.Errorf("inspect %+v", inspect)
	}

	// A second image makes 1-char prefixes possibly ambiguous; the full ID stays unique.
	img2, err := s.Import(ctx, bytes.NewReader(mkTar(tarFile{"x", "y"})), "", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.List()) != 2 {
		t.Fatalf("list %d", len(s.List()))
	}
	if img.ID.Encoded()[0] == img2.ID.Encoded()[0] {
		if _, err := s.Get(img.ID.Encoded()[:1]); !errdefs.IsNotFound(err) {
			t.Errorf("ambiguous prefix: %v", err)
		}
	}

	// By ID with two tags needs force.
	if _, err := s.Delete(img.ID.Encoded()[:12], false, nil); !errdefs.IsConflict(err) {
		t.Fatalf("delete multi-tagged: %v", err)
	}
	// By tag: untag only.
	resp, err := s.Delete("localhost:5000/a/b:t", false, nil)
	if err != nil || len(resp) != 1 || resp[0].Untagged != "localhost:5000/a/b:t" {
		t.Fatalf("untag: %+v %v", resp, err)
	}
	// In use: conflict, and force only untags.
	inUse := func(id digest.Digest) bool { return id == img.ID }
	if _, err := s.Delete("busybox", false, inUse); !errdefs.IsConflict(err) {
		t.Fatalf("in use: %v", err)
	}
	if _, err := s.Delete("busybox", true, inUse); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(img.ID.String()); err != nil || len(got.RepoTags) != 0 {
		t.Fatalf("forced in-use delete removed the image: %v", err)
	}
	resp, err = s.Delete(img.ID.String(), false, nil)
	if err != nil || len(resp) != 2 || resp[0].Deleted != img.ID.String() || resp[1].Deleted != img.Layers[0].String() {
		t.Fatalf("delete: %+v %v", resp, err)
	}
	if _, err := s.Get(img.ID.String()); !errdefs.IsNotFound(err) {
		t.Error("image survived")
	}
	if n := countFiles(t, filepath.Join(e.root, "graph", "overlay2")); n != 2 { // l/ and img2's layer
		t.Errorf("%d driver dirs left", n)
	}
}

func TestLoadMountSave(t *testing.T) {
	for _, driver := range []string{"overlay2", "vfs"} {
		t.Run(driver, func(t *testing.T) {
			e := newEnv(t, driver)
			s := e.store
			var out bytes.Buffer
			names, err := s.Load(ctx, bytes.NewReader(dockerSaveTar([]string{"test/save:v1"}, nil)), &out)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != 1 || names[0] != "test/save:v1" || !strings.Contains(out.String(), `{"stream":"Loaded image: test/save:v1\n"}`) {
				t.Fatalf("names %v out %q", names, out.String())
			}
			names, err = s.Load(ctx, bytes.NewReader(ociLayoutTar("test/oci:v2")), nil)
			if err != nil || len(names) != 1 || names[0] != "test/oci:v2" {
				t.Fatalf("oci load: %v %v", names, err)
			}
			img, err := s.Get("test/save:v1")
			if err != nil {
				t.Fatal(err)
			}
			if oci, _ := s.Get("test/oci:v2"); oci.ID != img.ID || len(s.List()) != 1 {
				t.Fatal("the same config should be one image")
			}

			if err := s.CreateRWLayer("c1", img.ID); err != nil {
				t.Fatal(err)
			}
			rootfs, err := s.Mount("c1")
			if err != nil {
				t.Fatal(err)
			}
			if got := walk(t, rootfs); got != wantView {
				t.Errorf("rootfs view %q, want %q", got, wantView)
			}
			os.WriteFile(filepath.Join(rootfs, "etc/hostname"), []byte("changed"), 0o644)

			// A daemon restart finds the RW layer and reuses the mount.
			e.reopen(t)
			s = e.store
			again, err := s.Mount("c1")
			if err != nil || again != rootfs {
				t.Fatalf("remount after restart: %q %v", again, err)
			}
			if b, _ := os.ReadFile(filepath.Join(again, "etc/hostname")); string(b) != "changed" {
				t.Errorf("hostname %q", b)
			}

			// Save reproduces the original layer bytes: loading it into a
			// fresh store verifies the diff IDs and gives the same ID.
			var saved bytes.Buffer
			if err := s.Save(ctx, []string{"test/save:v1"}, &saved); err != nil {
				t.Fatal(err)
			}
			e2 := newEnv(t, driver)
			names, err = e2.store.Load(ctx, &saved, nil)
			if err != nil || len(names) != 1 || names[0] != "test/save:v1" {
				t.Fatalf("reload: %v %v", names, err)
			}
			if got, _ := e2.store.Get("test/save:v1"); got.ID != img.ID {
				t.Errorf("reloaded ID %s != %s", got.ID, img.ID)
			}

			if err := s.Unmount("c1"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Delete(img.ID.String(), true, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.RemoveRWLayer("c1"); err != nil {
				t.Fatal(err)
			}
			if n := countFiles(t, filepath.Join(e.root, "image", "layerdb", "sha256")); n != 0 {
				t.Errorf("%d layer files left", n)
			}
		})
	}
}

func TestHostileLoad(t *testing.T) {
	e := newEnv(t, "")
	s := e.store
	badDiff := mkTar(tarFile{"manifest.json", string(mustJSON([]manifestEntry{{Config: "c.json", Layers: []string{"l1.tar", "l2.tar"}}}))},
		tarFile{"c.json", string(testConfig(layer1, layer2))}, tarFile{"l1.tar", string(layer1)}, tarFile{"l2.tar", string(layer1)})
	cases := map[string][]byte{
		"dotdot layer path":   dockerSaveTar(nil, []string{"aaa/layer.tar", "../../../etc/passwd"}),
		"absolute layer path": dockerSaveTar(nil, []string{"/etc/passwd", "bbb/layer.tar"}),
		"missing layer":       dockerSaveTar(nil, []string{"aaa/layer.tar", "zzz/layer.tar"}),
		"outer escape":        mkTar(tarFile{"../evil", "x"}, tarFile{"manifest.json", "[]"}),
		"diff id mismatch":    badDiff,
		"bad tag":             dockerSaveTar([]string{"Bad:Tag"}, nil),
		"garbage":             []byte("this is not a tar file at all, not even close....."),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := s.Load(ctx, bytes.NewReader(data), nil)
			if !errdefs.IsInvalidParameter(err) {
				t.Fatalf("want InvalidParameter, got %v", err)
			}
			if len(s.List()) != 0 || len(s.layers) != 0 {
				t.Fatalf("left %d images, %d layers", len(s.List()), len(s.layers))
			}
			for _, d := range []string{"image/tmp", "image/layerdb/sha256", "image/imagedb/sha256"} {
				if n := countFiles(t, filepath.Join(e.root, d)); n != 0 {
					t.Errorf("%s holds %d entries", d, n)
				}
			}
			if _, err := os.Stat(filepath.Join(e.root, "image", "evil")); err == nil {
				t.Error("outer tar escaped")
			}
		})
	}
	if n := countFiles(t, filepath.Join(e.root, "graph", "overlay2")); n != 1 { // only l/
		t.Errorf("%d driver dirs left", n)
	}
}

func TestCorruptMetadata(t *testing.T) {
	e := newEnv(t, "")
	a, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"a", "a"})), "a", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"b", "b"})), "b", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A torn image config and a torn layer record of another image.
	cfgPath := filepath.Join(e.root, "image", "imagedb", "sha256", b.ID.Encoded())
	os.WriteFile(cfgPath, []byte(`{"architecture":`), 0o600)
	os.WriteFile(filepath.Join(e.root, "image", "imagedb", "sha256", ".tmp-half"), []byte("x"), 0o600)
	e.reopen(t)
	if _, err := e.store.Get(a.ID.String()); err != nil {
		t.Fatalf("intact image lost: %v", err)
	}
	if _, err := e.store.Get(b.ID.String()); !errdefs.IsNotFound(err) {
		t.Fatalf("corrupt image loaded: %v", err)
	}
	if got, err := e.store.Get("a"); err != nil || got.ID != a.ID {
		t.Fatalf("tag lost: %v", err)
	}

	// Corrupt tags: images survive, untagged.
	os.WriteFile(filepath.Join(e.root, "image", "repositories.json"), []byte("{\"Repositories\": {"), 0o600)
	e.reopen(t)
	got, err := e.store.Get(a.ID.String())
	if err != nil || len(got.RepoTags) != 0 {
		t.Fatalf("after corrupt tags: %v %v", got, err)
	}
	if err := e.store.Tag(a.ID.String(), "a:again"); err != nil {
		t.Fatal(err)
	}
	e.reopen(t)
	if _, err := e.store.Get("a:again"); err != nil {
		t.Fatal(err)
	}
}

func TestZeroLayerImage(t *testing.T) {
	for _, driver := range []string{"overlay2", "vfs"} {
		t.Run(driver, func(t *testing.T) {
			e := newEnv(t, driver)
			cfg := testConfig()
			arch := mkTar(tarFile{"c.json", string(cfg)},
				tarFile{"manifest.json", string(mustJSON([]manifestEntry{{Config: "c.json", RepoTags: []string{"scratch:x"}}}))})
			if _, err := e.store.Load(ctx, bytes.NewReader(arch), nil); err != nil {
				t.Fatal(err)
			}
			img, _ := e.store.Get("scratch:x")
			if err := e.store.CreateRWLayer("c0", img.ID); err != nil {
				t.Fatal(err)
			}
			rootfs, err := e.store.Mount("c0")
			if err != nil {
				t.Fatal(err)
			}
			if got := walk(t, rootfs); got != "" {
				t.Errorf("empty image shows %q", got)
			}
			if err := e.store.RemoveRWLayer("c0"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
