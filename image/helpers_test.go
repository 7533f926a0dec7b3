package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/image/graphdriver"
)

// tarFile is an entry for mkTar; a name ending in "/" is a directory.
type tarFile struct {
	name, body string
}

func mkTar(files ...tarFile) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f.body)), ModTime: time.Unix(1600000000, 0)}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		tw.WriteHeader(h)
		tw.Write([]byte(f.body))
	}
	tw.Close()
	return buf.Bytes()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Two layers; the second deletes a file and makes a directory opaque.
var (
	layer1 = mkTar(tarFile{"etc/", ""}, tarFile{"etc/hostname", "one"}, tarFile{"etc/gone", "x"},
		tarFile{"opq/", ""}, tarFile{"opq/old", "o"}, tarFile{"keep", "k"})
	layer2 = mkTar(tarFile{"etc/", ""}, tarFile{"etc/.wh.gone", ""}, tarFile{"opq/", ""},
		tarFile{"opq/.wh..wh..opq", ""}, tarFile{"opq/new", "n"}, tarFile{"added", "a"})
	wantView = "added etc etc/hostname keep opq opq/new"
)

func testConfig(layers ...[]byte) []byte {
	created := time.Unix(1700000000, 0).UTC()
	cfg := ocispec.Image{Created: &created, Platform: ocispec.Platform{Architecture: "amd64", OS: "linux"},
		Config: ocispec.ImageConfig{Cmd: []string{"/bin/sh"}, Env: []string{"A=b"}, Labels: map[string]string{"l": "v"}},
		RootFS: ocispec.RootFS{Type: "layers"}}
	for _, l := range layers {
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.FromBytes(l))
	}
	return mustJSON(cfg)
}

// dockerSaveTar builds a legacy-style `docker save` archive: layer dirs
// with layer.tar (the second one gzip-compressed).
func dockerSaveTar(tags []string, layerPaths []string) []byte {
	cfg := testConfig(layer1, layer2)
	if layerPaths == nil {
		layerPaths = []string{"aaa/layer.tar", "bbb/layer.tar"}
	}
	files := []tarFile{
		{"aaa/", ""}, {"aaa/layer.tar", string(layer1)},
		{"bbb/", ""}, {"bbb/layer.tar", string(gz(layer2))},
		{digest.FromBytes(cfg).Encoded() + ".json", string(cfg)},
		{"manifest.json", string(mustJSON([]manifestEntry{{Config: digest.FromBytes(cfg).Encoded() + ".json", RepoTags: tags, Layers: layerPaths}}))},
	}
	return mkTar(files...)
}

// ociLayoutTar builds an OCI image layout whose index points at a nested
// index with an arm64 and an amd64 manifest.
func ociLayoutTar(name string) []byte {
	cfg := testConfig(layer1, layer2)
	blob := func(b []byte) tarFile { return tarFile{"blobs/sha256/" + digest.FromBytes(b).Encoded(), string(b)} }
	l2 := gz(layer2)
	man := mustJSON(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
		Layers: []ocispec.Descriptor{
			{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(layer1), Size: int64(len(layer1))},
			{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(l2), Size: int64(len(l2))}}})
	other := mustJSON(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromString("nope")}})
	nested := mustJSON(ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
		{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(other), Size: int64(len(other)), Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}},
		{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(man), Size: int64(len(man)), Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}},
	}})
	index := mustJSON(ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
		{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(nested), Size: int64(len(nested)),
			Annotations: map[string]string{ocispec.AnnotationRefName: name}}}})
	return mkTar(tarFile{"oci-layout", `{"imageLayoutVersion":"1.0.0"}`}, tarFile{"index.json", string(index)},
		tarFile{"blobs/", ""}, tarFile{"blobs/sha256/", ""},
		blob(cfg), blob(layer1), blob(l2), blob(man), blob(other), blob(nested))
}

type env struct {
	root  string
	drv   graphdriver.Driver
	store *Store
}

func newEnv(t *testing.T, driver string) *env {
	t.Helper()
	return newEnvAt(t, t.TempDir(), driver)
}

// newEnvAt makes a store under root (which must exist).
func newEnvAt(t *testing.T, root, driver string) *env {
	t.Helper()
	drv, err := graphdriver.New(filepath.Join(root, "graph"), driver)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		drv.Cleanup()
		// Mounts under root, but for a filesystem the test put at root.
		m, _ := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) {
			return i.Mountpoint == root || !strings.HasPrefix(i.Mountpoint, root+"/"), false
		})
		if len(m) > 0 {
			t.Errorf("mounts left behind: %d", len(m))
		}
	})
	s, err := New(filepath.Join(root, "image"), drv)
	if err != nil {
		t.Fatal(err)
	}
	return &env{root: root, drv: drv, store: s}
}

func (e *env) reopen(t *testing.T) {
	t.Helper()
	s, err := New(filepath.Join(e.root, "image"), e.drv)
	if err != nil {
		t.Fatal(err)
	}
	e.store = s
}

// walk lists a tree's paths, sorted, space separated.
func walk(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if rel, _ := filepath.Rel(dir, p); rel != "." {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, " ")
}

func countFiles(t *testing.T, dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
