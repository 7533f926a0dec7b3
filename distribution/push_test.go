package distribution

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/opencontainers/go-digest"
)

// newTestGzipReader compresses src as Compressed does.
func newTestGzipReader(t *testing.T, src []byte) (*gzipReader, *streamedBlob) {
	t.Helper()
	b := &streamedBlob{}
	r := &gzipReader{src: bytes.NewReader(src), rc: io.NopCloser(nil), b: b, h: sha256.New(), in: make([]byte, pushChunk)}
	var err error
	r.gz, err = gzip.NewWriterLevel(&r.out, gzip.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	return r, b
}

// onlyWriter hides bytes.Buffer's ReadFrom: io.Copy then calls the
// reader's WriteTo, as the HTTP transport's body copy does.
type onlyWriter struct{ w *bytes.Buffer }

func (w onlyWriter) Write(p []byte) (int, error) { return w.w.Write(p) }

// onlyReader hides WriteTo, so io.Copy reads 32 KiB at a time.
type onlyReader struct{ r io.Reader }

func (r onlyReader) Read(p []byte) (int, error) { return r.r.Read(p) }

// The upload's bytes must not depend on how the transport copies them
// (Read or WriteTo): the blob's digest is remembered and asked for on the
// next push. Digest and size are those of the bytes handed out.
func TestGzipReaderWriteToMatchesRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3*pushChunk+777)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for name, src := range map[string][]byte{
		"empty":        nil,
		"random":       random,
		"compressible": bytes.Repeat([]byte("layer "), pushChunk),
	} {
		t.Run(name, func(t *testing.T) {
			r1, b1 := newTestGzipReader(t, src)
			var viaRead bytes.Buffer
			if _, err := io.Copy(onlyWriter{&viaRead}, onlyReader{r1}); err != nil {
				t.Fatal(err)
			}
			r2, b2 := newTestGzipReader(t, src)
			var viaWriteTo bytes.Buffer
			n, err := io.Copy(onlyWriter{&viaWriteTo}, r2)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(viaWriteTo.Len()) {
				t.Errorf("WriteTo reported %d bytes, wrote %d", n, viaWriteTo.Len())
			}
			if !bytes.Equal(viaRead.Bytes(), viaWriteTo.Bytes()) {
				t.Fatalf("Read gave %d bytes, WriteTo %d; differ", viaRead.Len(), viaWriteTo.Len())
			}
			for _, c := range []struct {
				b   *streamedBlob
				out []byte
			}{{b1, viaRead.Bytes()}, {b2, viaWriteTo.Bytes()}} {
				d, size, err := c.b.result()
				if err != nil {
					t.Fatal(err)
				}
				if d != digest.FromBytes(c.out) || size != int64(len(c.out)) {
					t.Errorf("recorded %s %d, handed out %s %d", d, size, digest.FromBytes(c.out), len(c.out))
				}
			}
			zr, err := gzip.NewReader(bytes.NewReader(viaWriteTo.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, src) {
				t.Fatal("the upload does not decompress to the layer")
			}
		})
	}
}

// failWriter takes n bytes, then fails, as a connection that drops does.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, io.ErrClosedPipe
	}
	w.n -= len(p)
	return len(p), nil
}

// A failed write is the upload's error, and no digest is recorded for a
// blob that was not handed out whole.
func TestGzipReaderWriteToError(t *testing.T) {
	src := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 2*pushChunk)
	r, b := newTestGzipReader(t, src)
	if _, err := r.WriteTo(&failWriter{n: 1000}); err != io.ErrClosedPipe {
		t.Fatalf("err %v, want %v", err, io.ErrClosedPipe)
	}
	if _, _, err := b.result(); err == nil {
		t.Fatal("digest recorded after a failed upload")
	}
}
