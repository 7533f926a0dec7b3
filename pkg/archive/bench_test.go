package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"
)

// benchLayer is a layer like a small distribution's: many small files and
// a few large ones, 32 MiB in all.
func benchLayer(b *testing.B) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	small := bytes.Repeat([]byte("x"), 4096)
	large := bytes.Repeat([]byte("y"), 4<<20)
	tw.WriteHeader(&tar.Header{Name: "usr/", Typeflag: tar.TypeDir, Mode: 0o755})
	for i := 0; i < 4096; i++ {
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("usr/f%05d", i), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(small))})
		tw.Write(small)
	}
	for i := 0; i < 4; i++ {
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("usr/big%d", i), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(large))})
		tw.Write(large)
	}
	tw.Close()
	return buf.Bytes()
}

// BenchmarkApply measures layer extraction with the diff ID computed on
// the way, as `docker load` and `docker import` do it.
func BenchmarkApply(b *testing.B) {
	layer := benchLayer(b)
	b.SetBytes(int64(len(layer)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dest, err := os.MkdirTemp("", "bench-apply-")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		h := sha256.New()
		if _, err := Apply(context.Background(), bytes.NewReader(layer), dest, ApplyOptions{Whiteouts: WhiteoutOverlay, Digest: h}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(dest)
		b.StartTimer()
	}
}
