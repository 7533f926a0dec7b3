package inroot

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostile makes a root holding links that point out of it, and a secret
// outside it that nothing may read or overwrite.
func hostile(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "dir"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "dir", "file"), []byte("inside"), 0o644))
	must(t, os.Symlink("/", filepath.Join(root, "escape")))                   // absolute
	must(t, os.Symlink("../../../../outside", filepath.Join(root, "up")))     // relative
	must(t, os.Symlink(outside, filepath.Join(root, "abs")))                  // absolute host path
	must(t, os.Symlink("dir/../../../outside", filepath.Join(root, "chain"))) // a .. chain
	return root, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, r *Root, p string) map[string]string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Tar(p, filepath.Base(p), &buf); err != nil {
		t.Fatalf("tar %s: %v", p, err)
	}
	out := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		must(t, err)
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

func TestReadNeverLeavesTheRoot(t *testing.T) {
	root, _ := hostile(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	for _, p := range []string{"/escape/", "/up/", "/abs/", "/chain/", "/escape/../../outside/", "/../../outside/secret", "/up/secret", "/chain/secret"} {
		got := map[string]string{}
		var buf bytes.Buffer
		if err := r.Tar(p, "x", &buf); err == nil {
			tr := tar.NewReader(&buf)
			for {
				h, err := tr.Next()
				if err != nil {
					break
				}
				b, _ := io.ReadAll(tr)
				got[h.Name] = string(b)
			}
		}
		for n, c := range got {
			if c == "host secret" {
				t.Errorf("%s: read the host's secret as %s", p, n)
			}
		}
	}
	// A link is archived as a link, not followed.
	if got := names(t, r, "/escape"); len(got) != 1 {
		t.Errorf("/escape: %v", got)
	}
	// Followed (trailing "/"), it resolves to the root itself.
	if got := names(t, r, "/escape/"); got["escape/dir/file"] != "inside" {
		t.Errorf("/escape/: %v", got)
	}
	st, err := r.Stat("/up")
	must(t, err)
	if st.LinkTarget != "" && strings.Contains(st.LinkTarget, "..") {
		t.Errorf("link target %q", st.LinkTarget)
	}
	st, err = r.Stat("/escape")
	must(t, err)
	if st.LinkTarget != "/" || st.Mode&os.ModeSymlink == 0 {
		t.Errorf("stat /escape: %+v", st)
	}
	if _, err := r.Stat("/dir/file/"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file with a trailing slash: %v", err)
	}
	if _, err := r.Stat("/nope"); !IsNotExist(err) {
		t.Errorf("missing: %v", err)
	}
}

func tarOf(t *testing.T, entries ...*tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Linkname))
			content := h.Linkname
			h.Linkname = ""
			must(t, tw.WriteHeader(h))
			_, err := tw.Write([]byte(content))
			must(t, err)
			continue
		}
		must(t, tw.WriteHeader(h))
	}
	must(t, tw.Close())
	return &buf
}

func TestWriteNeverLeavesTheRoot(t *testing.T) {
	root, outside := hostile(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	// Into each link: the write lands inside the root, or fails.
	for _, dst := range []string{"/escape", "/up", "/abs", "/chain", "/escape/dir"} {
		err := r.Extract(dst, tarOf(t, &tar.Header{Name: "secret", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "pwned"}), ExtractOptions{})
		_ = err
	}
	b, err := os.ReadFile(filepath.Join(outside, "secret"))
	if err != nil || string(b) != "host secret" {
		t.Fatalf("host file changed: %q %v", b, err)
	}
	if des, _ := os.ReadDir(outside); len(des) != 1 {
		t.Fatalf("files written outside: %v", des)
	}
	// An archive that carries its own link, then writes through it.
	err = r.Extract("/dir", tarOf(t,
		&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../../outside", Mode: 0o777},
		&tar.Header{Name: "l/secret", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "pwned"},
	), ExtractOptions{})
	_ = err
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "host secret" {
		t.Fatalf("host file changed through an archive's link")
	}
	// Names that climb out are refused.
	for _, n := range []string{"../x", "a/../../x"} {
		if err := r.Extract("/dir", tarOf(t, &tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "x"}), ExtractOptions{}); err == nil {
			t.Errorf("%s accepted", n)
		}
	}
	// Hard links to a file outside are refused or resolved inside.
	_ = r.Extract("/dir", tarOf(t, &tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../up/secret"}), ExtractOptions{})
	if fi, err := os.Stat(filepath.Join(outside, "secret")); err == nil {
		if st := fi.Sys(); st != nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("secret's mode changed")
		}
	}
	// A plain extraction works, with owners and modes.
	must(t, r.Extract("/dir", tarOf(t,
		&tar.Header{Name: "sub/", Typeflag: tar.TypeDir, Mode: 0o750},
		&tar.Header{Name: "sub/f", Typeflag: tar.TypeReg, Mode: 0o640, Uid: 42, Gid: 43, Linkname: "ok", ModTime: time.Unix(1e9, 0)},
	), ExtractOptions{}))
	fi, err := os.Stat(filepath.Join(root, "dir", "sub", "f"))
	must(t, err)
	if fi.Mode().Perm() != 0o640 || fi.ModTime().Unix() != 1e9 {
		t.Errorf("f: %v %v", fi.Mode(), fi.ModTime())
	}
	if err := r.Extract("/dir/file", tarOf(t), ExtractOptions{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("extract into a file: %v", err)
	}
}

// TestSwapDuringCopy swaps a directory for a link out of the root while
// copies run: nothing outside is ever read or written.
func TestSwapDuringCopy(t *testing.T) {
	root, outside := hostile(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	must(t, os.MkdirAll(filepath.Join(root, "victim", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "victim", "deep", "secret"), []byte("inside"), 0o644))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		v, tmp := filepath.Join(root, "victim"), filepath.Join(root, "victim.tmp")
		for !stop.Load() {
			// Swap the directory for a link to the host's directory and back.
			_ = os.Rename(v, tmp)
			_ = os.Symlink(outside, v)
			_ = os.Remove(v)
			_ = os.Symlink("../../outside", v)
			_ = os.Remove(v)
			_ = os.Rename(tmp, v)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var buf bytes.Buffer
		if err := r.Tar("/victim/deep/", "deep", &buf); err == nil {
			if strings.Contains(buf.String(), "host secret") {
				t.Fatal("read the host's secret during a swap")
			}
		}
		_ = r.Extract("/victim/deep", tarOf(t, &tar.Header{Name: "secret", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "pwned"}), ExtractOptions{})
	}
	stop.Store(true)
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "host secret" {
		t.Fatal("host file overwritten during a swap")
	}
	if des, _ := os.ReadDir(outside); len(des) != 1 {
		t.Fatalf("files written outside: %v", des)
	}
}
