package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

type ent struct {
	name, body, link string
	typ              byte
	mode             int64
	uid, gid         int
	pax              map[string]string
}

func mkTar(t *testing.T, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			Linkname: e.link, ModTime: time.Unix(1700000000, 0), PAXRecords: e.pax}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// sandbox returns dest inside a parent dir, plus a sibling "outside"
// dir that hostile entries aim at.
func sandbox(t *testing.T) (dest, outside string) {
	root := t.TempDir()
	dest, outside = filepath.Join(root, "dest"), filepath.Join(root, "outside")
	os.Mkdir(dest, 0o755)
	os.Mkdir(outside, 0o755)
	return dest, outside
}

func TestApplyKeepsMetadata(t *testing.T) {
	dest, _ := sandbox(t)
	data := mkTar(t,
		ent{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "etc/passwd", body: "root:x:0:0\n", mode: 0o4755, uid: 1000, gid: 1001,
			pax: map[string]string{"SCHILY.xattr.user.test": "v1", "SCHILY.xattr.trusted.overlay.redirect": "/x"}},
		ent{name: "etc/hard", typ: tar.TypeLink, link: "etc/passwd"},
		ent{name: "bin", typ: tar.TypeSymlink, link: "/usr/bin"},
		ent{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		ent{name: "fifo", typ: tar.TypeFifo},
	)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	h := sha256.New()
	n, err := Apply(context.Background(), &gz, dest, ApplyOptions{Digest: h})
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len("root:x:0:0\n")) {
		t.Errorf("size %d", n)
	}
	if sum := sha256.Sum256(data); !bytes.Equal(sum[:], h.Sum(nil)) {
		t.Error("digest does not cover the uncompressed stream")
	}
	var st unix.Stat_t
	unix.Lstat(filepath.Join(dest, "etc/passwd"), &st)
	if st.Mode&0o7777 != 0o4755 || st.Uid != 1000 || st.Gid != 1001 || st.Nlink != 2 {
		t.Errorf("passwd: mode %o uid %d gid %d nlink %d", st.Mode, st.Uid, st.Gid, st.Nlink)
	}
	if st.Mtim.Sec != 1700000000 {
		t.Errorf("mtime %d", st.Mtim.Sec)
	}
	buf := make([]byte, 16)
	if n, err := unix.Lgetxattr(filepath.Join(dest, "etc/passwd"), "user.test", buf); err != nil || string(buf[:n]) != "v1" {
		t.Errorf("xattr: %q %v", buf[:n], err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dest, "etc/passwd"), "trusted.overlay.redirect", buf); err == nil {
		t.Error("overlay xattr from the tar was applied")
	}
	if l, _ := os.Readlink(filepath.Join(dest, "bin")); l != "/usr/bin" {
		t.Errorf("symlink %q", l)
	}
	unix.Lstat(filepath.Join(dest, "dev/null"), &st)
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		t.Errorf("dev/null mode %o", st.Mode)
	}
	unix.Lstat(filepath.Join(dest, "fifo"), &st)
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("fifo mode %o", st.Mode)
	}
	unix.Lstat(filepath.Join(dest, "etc"), &st)
	if st.Mtim.Sec != 1700000000 {
		t.Errorf("dir mtime %d", st.Mtim.Sec)
	}
}

func TestApplyHostile(t *testing.T) {
	cases := map[string][]ent{
		"dotdot":          {{name: "../evil", body: "x"}},
		"dotdot-nested":   {{name: "a/../../evil", body: "x"}},
		"symlink-escape":  {{name: "lnk", typ: tar.TypeSymlink, link: "../outside"}, {name: "lnk/evil", body: "x"}},
		"hardlink-escape": {{name: "hl", typ: tar.TypeLink, link: "../outside/target"}},
	}
	for name, ents := range cases {
		t.Run(name, func(t *testing.T) {
			dest, outside := sandbox(t)
			os.WriteFile(filepath.Join(outside, "target"), []byte("secret"), 0o644)
			_, err := Apply(context.Background(), bytes.NewReader(mkTar(t, ents...)), dest, ApplyOptions{})
			if !errdefs.IsInvalidParameter(err) {
				t.Fatalf("want InvalidParameter, got %v", err)
			}
			assertOnly(t, outside, "target")
			if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "evil")); err == nil {
				t.Fatal("wrote outside dest")
			}
		})
	}
}

// Absolute names and absolute symlinks are resolved inside dest, as a
// chroot would: writing through them lands in dest, never on the host.
func TestApplyAbsoluteStaysInside(t *testing.T) {
	dest, outside := sandbox(t)
	data := mkTar(t,
		ent{name: "/abs/file", body: "a"},
		ent{name: "lnk", typ: tar.TypeSymlink, link: outside},
		ent{name: "lnk/through", body: "b"},
		ent{name: "up", typ: tar.TypeSymlink, link: "/../../.."},
		ent{name: "up/x", body: "c"},
	)
	if _, err := Apply(context.Background(), bytes.NewReader(data), dest, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, outside)
	for _, p := range []string{"abs/file", filepath.Join(outside, "through"), "x"} {
		if _, err := os.Stat(filepath.Join(dest, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestApplyTruncated(t *testing.T) {
	dest, _ := sandbox(t)
	data := mkTar(t, ent{name: "big", body: string(bytes.Repeat([]byte("x"), 5000))})
	_, err := Apply(context.Background(), bytes.NewReader(data[:2000]), dest, ApplyOptions{})
	if !errdefs.IsInvalidParameter(err) {
		t.Fatalf("want InvalidParameter, got %v", err)
	}
	_, err = Apply(context.Background(), bytes.NewReader(data[:300]), dest, ApplyOptions{})
	if !errdefs.IsInvalidParameter(err) {
		t.Fatalf("header cut: want InvalidParameter, got %v", err)
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(names) {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}

func TestWhiteouts(t *testing.T) {
	layer := mkTar(t,
		ent{name: "gone", typ: tar.TypeDir, mode: 0o755},
		ent{name: ".wh.old"},
		ent{name: "dir/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "dir/.wh..wh..opq"},
		ent{name: "dir/new", body: "n"},
	)
	t.Run("overlay", func(t *testing.T) {
		dest, _ := sandbox(t)
		if _, err := Apply(context.Background(), bytes.NewReader(layer), dest, ApplyOptions{Whiteouts: WhiteoutOverlay}); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dest, "old"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
			t.Errorf("whiteout device: %v mode %o", err, st.Mode)
		}
		buf := make([]byte, 4)
		if n, err := unix.Lgetxattr(filepath.Join(dest, "dir"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
			t.Errorf("opaque xattr: %v", err)
		}
		// Round trip: TarDir turns them back into .wh. entries.
		var out bytes.Buffer
		if err := TarDir(dest, &out); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		tr := tar.NewReader(&out)
		for h, err := tr.Next(); err == nil; h, err = tr.Next() {
			names[h.Name] = true
		}
		for _, n := range []string{".wh.old", "dir/", "dir/.wh..wh..opq", "dir/new", "gone/"} {
			if !names[n] {
				t.Errorf("TarDir lacks %s: %v", n, names)
			}
		}
	})
	t.Run("delete", func(t *testing.T) {
		dest, _ := sandbox(t)
		os.WriteFile(filepath.Join(dest, "old"), nil, 0o644)
		os.MkdirAll(filepath.Join(dest, "dir/lower"), 0o755)
		if _, err := Apply(context.Background(), bytes.NewReader(layer), dest, ApplyOptions{Whiteouts: WhiteoutDelete}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(dest, "old")); !os.IsNotExist(err) {
			t.Error("old survived")
		}
		if _, err := os.Lstat(filepath.Join(dest, "dir/lower")); !os.IsNotExist(err) {
			t.Error("opaque dir kept lower content")
		}
		if _, err := os.Lstat(filepath.Join(dest, "dir/new")); err != nil {
			t.Error("opaque dir lost new content")
		}
	})
}

func TestReplayIsByteExact(t *testing.T) {
	dest, _ := sandbox(t)
	data := mkTar(t,
		ent{name: "a/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "a/f", body: "hello world"},
		ent{name: "/b", body: string(bytes.Repeat([]byte("z"), 70000))},
		ent{name: ".wh.c"},
		ent{name: "empty"},
	)
	data = append(data, make([]byte, 4096)...) // trailing zero padding
	var meta bytes.Buffer
	if _, err := Apply(context.Background(), bytes.NewReader(data), dest, ApplyOptions{Whiteouts: WhiteoutOverlay, Meta: &meta}); err != nil {
		t.Fatal(err)
	}
	if meta.Len() > 12000 {
		t.Errorf("record too large: %d", meta.Len())
	}
	var out bytes.Buffer
	if err := Replay(&meta, dest, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("replayed %d bytes, original %d; differ", out.Len(), len(data))
	}
}

// Check is asked before the first entry and every CheckEvery bytes, in
// the middle of a file too; its error stops the extraction as it is.
func TestApplyCheck(t *testing.T) {
	big := string(make([]byte, 10<<20))
	data := mkTar(t, ent{name: "d", typ: tar.TypeDir, mode: 0o755}, ent{name: "d/big", body: big}, ent{name: "after", body: "x"})

	var calls []int64
	dest, _ := sandbox(t)
	if _, err := Apply(context.Background(), bytes.NewReader(data), dest, ApplyOptions{
		CheckEvery: 1 << 20, Check: func(n int64) error { calls = append(calls, n); return nil }}); err != nil {
		t.Fatal(err)
	}
	if len(calls) < 10 || calls[0] != 0 {
		t.Fatalf("Check calls %v: want one at 0, then about every MiB", calls)
	}
	for i := 1; i < len(calls); i++ {
		if d := calls[i] - calls[i-1]; d < 1<<20 || d > 1<<20+64<<10 {
			t.Fatalf("Check calls %v: step %d is %d bytes", calls, i, d)
		}
	}

	stop := errdefs.Unavailable(errors.New("full"))
	dest, _ = sandbox(t)
	_, err := Apply(context.Background(), bytes.NewReader(data), dest, ApplyOptions{
		CheckEvery: 1 << 20, Check: func(n int64) error {
			if n > 3<<20 {
				return stop
			}
			return nil
		}})
	if err != stop {
		t.Fatalf("Apply = %v, want Check's error as is", err)
	}
	fi, err := os.Stat(filepath.Join(dest, "d", "big"))
	if err != nil || fi.Size() > 4<<20+64<<10 {
		t.Fatalf("stopped after writing %v bytes (%v)", fi.Size(), err)
	}
	if _, err := os.Stat(filepath.Join(dest, "after")); err == nil {
		t.Fatal("extraction went on after Check failed")
	}

	// Refused before anything is written.
	dest, _ = sandbox(t)
	if _, err := Apply(context.Background(), bytes.NewReader(data), dest, ApplyOptions{
		Check: func(int64) error { return stop }}); err != stop {
		t.Fatalf("Apply = %v", err)
	}
	assertOnly(t, dest)
}

// Relative links that climb above the root are common in images (a
// busybox applet linked as ../../../bin/busybox): they are kept as data.
// Writing through such a link is refused, and writing through any other
// link (or a directory replaced by one) never leaves dest.
func TestApplyClimbingSymlinks(t *testing.T) {
	dest, outside := sandbox(t)
	data := mkTar(t,
		ent{name: "bin/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "bin/busybox", body: "bb"},
		ent{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "bin/sh", typ: tar.TypeSymlink, link: "../../../bin/busybox"},
		ent{name: "usr/bin/env", typ: tar.TypeSymlink, link: "../../../../../bin/busybox"},
		ent{name: "up", typ: tar.TypeSymlink, link: "../../.."},
	)
	if _, err := Apply(context.Background(), bytes.NewReader(data), dest, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"bin/sh": "../../../bin/busybox", "usr/bin/env": "../../../../../bin/busybox", "up": "../../.."} {
		if got, err := os.Readlink(filepath.Join(dest, p)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", p, got, err, want)
		}
	}

	hostile := map[string][]ent{
		"through-file-link": {{name: "bin/sh/evil", body: "x"}},
		"through-dir-link":  {{name: "up/outside/evil", body: "x"}},
		"hardlink-through":  {{name: "hl", typ: tar.TypeLink, link: "up/outside/target"}},
		"whiteout-through":  {{name: "up/outside/.wh.target"}},
	}
	for name, ents := range hostile {
		t.Run(name, func(t *testing.T) {
			os.WriteFile(filepath.Join(outside, "target"), []byte("secret"), 0o644)
			_, err := Apply(context.Background(), bytes.NewReader(mkTar(t, ents...)), dest, ApplyOptions{Whiteouts: WhiteoutDelete})
			if !errdefs.IsInvalidParameter(err) {
				t.Fatalf("want InvalidParameter, got %v", err)
			}
			assertOnly(t, outside, "target")
		})
	}

	// A directory replaced by a climbing link after its entry: the
	// deferred times must not be set through the link.
	dest2, outside2 := sandbox(t)
	old := time.Unix(1000, 0)
	os.Chtimes(outside2, old, old)
	data = mkTar(t,
		ent{name: "d/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "d/outside", typ: tar.TypeDir, mode: 0o755},
		ent{name: "d", typ: tar.TypeSymlink, link: "../"},
	)
	if _, err := Apply(context.Background(), bytes.NewReader(data), dest2, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(outside2); !fi.ModTime().Equal(old) {
		t.Errorf("times set outside dest: %v", fi.ModTime())
	}
}

// writeOnly hides bytes.Buffer's ReadFrom, as the io.Pipe a push replays
// into does, so Replay copies through its own buffer.
type writeOnly struct{ w *bytes.Buffer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

func TestReplayLargeFilesThroughBuffer(t *testing.T) {
	dest, _ := sandbox(t)
	big := make([]byte, 3*replayBuf+1234)
	for i := range big {
		big[i] = byte(i * 7)
	}
	data := mkTar(t,
		ent{name: "big", body: string(big)},
		ent{name: "small", body: "x"},
		ent{name: "exact", body: string(big[:replayBuf])},
	)
	var meta bytes.Buffer
	if _, err := Apply(context.Background(), bytes.NewReader(data), dest, ApplyOptions{Meta: &meta}); err != nil {
		t.Fatal(err)
	}
	rec := meta.Bytes()
	var out bytes.Buffer
	if err := Replay(bytes.NewReader(rec), dest, writeOnly{&out}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("replayed %d bytes, original %d; differ", out.Len(), len(data))
	}

	// A file shorter than when it was recorded is an error, not a
	// shorter tar.
	if err := os.Truncate(filepath.Join(dest, "big"), int64(len(big)-1)); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Replay(bytes.NewReader(rec), dest, writeOnly{&out}); err == nil {
		t.Fatal("replay of a truncated file succeeded")
	}
}
