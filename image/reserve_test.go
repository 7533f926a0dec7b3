package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdengine/engine/pkg/fsreserve"
)

// gzipBomb is a gzipped tar of one file of size zero bytes.
func gzipBomb(t *testing.T, name string, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeros{}, size); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A gzip bomb fed to import or load stops at the reserve, with an error
// that says so, and leaves nothing behind; then a small import works.
func TestReserveStopsGzipBomb(t *testing.T) {
	root := smallFS(t, "48m")
	e := newEnvAt(t, root, "")
	r, err := fsreserve.Parse("16MB")
	if err != nil {
		t.Fatal(err)
	}
	e.store.SetMinFreeSpace(r)
	bomb := gzipBomb(t, "zeros", 128<<20)
	// A load whose outer archive itself is the bomb: the layer tar is
	// written out while the archive is unpacked.
	var lb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&lb, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "l.tar", Mode: 0o644, Size: 128 << 20, Typeflag: tar.TypeReg})
	io.CopyN(tw, zeros{}, 128<<20)
	tw.Close()
	zw.Close()

	for name, op := range map[string]func() error{
		"import": func() error {
			_, err := e.store.Import(ctx, bytes.NewReader(bomb), "bomb", ImportOptions{}, nil)
			return err
		},
		"load": func() error {
			_, err := e.store.Load(ctx, bytes.NewReader(lb.Bytes()), nil)
			return err
		},
	} {
		err := op()
		if !fsreserve.IsError(err) || !strings.Contains(err.Error(), "--min-free-space=16MB") {
			t.Fatalf("%s of a bomb: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
		if free := freeBytes(t, root); free < 16<<20 {
			t.Errorf("%s: %d bytes free, below the reserve", name, free)
		}
		if got := e.driverDirs(t); len(got) != 0 {
			t.Errorf("%s: driver dirs left: %v", name, got)
		}
		for _, d := range []string{"image/tmp", "image/layerdb/sha256", "image/imagedb/sha256"} {
			if n := countFiles(t, filepath.Join(root, d)); n != 0 {
				t.Errorf("%s: %s holds %d entries", name, d, n)
			}
		}
	}
	if _, err := e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"small", "s"})), "small", ImportOptions{}, nil); err != nil {
		t.Fatalf("small import after the bomb: %v", err)
	}
	// Already below the reserve: refused before anything is written.
	fill(t, filepath.Join(root, "filler"))
	_, err = e.store.Import(ctx, bytes.NewReader(mkTar(tarFile{"x", "x"})), "", ImportOptions{}, nil)
	if !fsreserve.IsError(err) {
		t.Fatalf("import on a full disk: %v", err)
	}
	os.Remove(filepath.Join(root, "filler"))
}
