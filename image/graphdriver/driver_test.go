package graphdriver

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/errdefs"
)

func layerTar(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Now()})
		tw.Write([]byte(body))
	}
	tw.Close()
	return buf.Bytes()
}

func apply(t *testing.T, d Driver, id string, files map[string]string) {
	t.Helper()
	if _, err := archive.Apply(context.Background(), bytes.NewReader(layerTar(t, files)), d.Diff(id), archive.ApplyOptions{Whiteouts: d.Whiteouts()}); err != nil {
		t.Fatal(err)
	}
}

func TestDrivers(t *testing.T) {
	for _, name := range []string{"overlay2", "vfs"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			d, err := New(root, name)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Cleanup()
			if err := d.Create("base", ""); err != nil {
				t.Fatal(err)
			}
			apply(t, d, "base", map[string]string{"a": "A", "b": "B"})
			if err := d.Create("top", "base"); err != nil {
				t.Fatal(err)
			}
			apply(t, d, "top", map[string]string{"c": "C", ".wh.b": ""})

			// RW on a single-layer chain, on a two-layer chain, and on nothing.
			for _, tc := range []struct{ id, parent, want string }{
				{"rw1", "base", "a b"}, {"rw2", "top", "a c"}, {"rw0", "", ""},
			} {
				if err := d.CreateRW(tc.id, tc.parent); err != nil {
					t.Fatal(err)
				}
				rootfs, err := d.Mount(tc.id)
				if err != nil {
					t.Fatal(err)
				}
				if got := listDir(t, rootfs); got != tc.want {
					t.Errorf("%s sees %q, want %q", tc.id, got, tc.want)
				}
				if err := os.WriteFile(filepath.Join(rootfs, "new"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				again, err := d.Mount(tc.id)
				if err != nil || again != rootfs {
					t.Fatalf("remount: %q %v", again, err)
				}
				if name == "overlay2" {
					if n := countMounts(t, rootfs); n != 1 {
						t.Errorf("%d mounts at %s", n, rootfs)
					}
				}
				if err := d.Unmount(tc.id); err != nil {
					t.Fatal(err)
				}
				if err := d.Remove(tc.id); err != nil {
					t.Fatal(err)
				}
			}
			// The read-only image view works too, and lower layers are untouched.
			rootfs, err := d.Mount("top")
			if err != nil {
				t.Fatal(err)
			}
			if got := listDir(t, rootfs); got != "a c" {
				t.Errorf("image view %q", got)
			}
			d.Unmount("top")
			// Image mounts: read-only views of a chain (several lowers, and
			// a base layer alone), any number at once, at targets outside
			// the driver's root.
			for _, tc := range []struct{ id, want string }{{"top", "a c"}, {"base", "a b"}} {
				var views []string
				for range 2 {
					v := t.TempDir()
					if err := d.MountReadOnly(tc.id, v); err != nil {
						t.Fatal(err)
					}
					views = append(views, v)
				}
				for _, v := range views {
					if got := listDir(t, v); got != tc.want {
						t.Errorf("read-only view of %s: %q, want %q", tc.id, got, tc.want)
					}
					if err := os.WriteFile(filepath.Join(v, "new"), []byte("x"), 0o644); err == nil {
						t.Errorf("read-only view of %s is writable", tc.id)
					}
					if err := unix.Unmount(v, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := d.MountReadOnly("nosuch", t.TempDir()); !errdefs.IsNotFound(err) {
				t.Errorf("view of a missing layer: %v", err)
			}
			for _, id := range []string{"top", "base"} {
				if err := d.Remove(id); err != nil {
					t.Fatal(err)
				}
			}
			if n := countMounts(t, root); n != 0 {
				t.Errorf("%d mounts left under %s", n, root)
			}
		})
	}
}

func TestAutoPicksOverlay(t *testing.T) {
	d, err := New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name() != "overlay2" {
		t.Errorf("auto picked %s", d.Name())
	}
	if _, err := New(t.TempDir(), "zfs"); err == nil {
		t.Error("unknown driver accepted")
	}
}

func listDir(t *testing.T, dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, e := range ents {
		if s != "" {
			s += " "
		}
		s += e.Name()
	}
	return s
}

func countMounts(t *testing.T, prefix string) int {
	m, err := mountinfo.GetMounts(mountinfo.PrefixFilter(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// List shows every layer directory, whole or half made, and a reopened
// driver drops short links whose layer is gone.
func TestListAndLeftovers(t *testing.T) {
	for _, name := range []string{"overlay2", "vfs"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			d, err := New(root, name)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"a", "b"} {
				if err := d.Create(id, ""); err != nil {
					t.Fatal(err)
				}
			}
			// A half-made layer: the directory and nothing else.
			half := filepath.Join(filepath.Dir(d.Diff("a")), "..", "half")
			if name == "vfs" {
				half = d.Diff("half.tmp")
			}
			if err := os.MkdirAll(half, 0o755); err != nil {
				t.Fatal(err)
			}
			ids, err := d.List()
			if err != nil {
				t.Fatal(err)
			}
			want := "a b half"
			if name == "vfs" {
				want = "a b half.tmp"
			}
			if got := strings.Join(ids, " "); got != want {
				t.Fatalf("List = %q, want %q", got, want)
			}
			for _, id := range ids {
				if id != "a" {
					if err := d.Remove(id); err != nil {
						t.Fatalf("remove %s: %v", id, err)
					}
				}
			}
			if ids, _ := d.List(); strings.Join(ids, " ") != "a" {
				t.Fatalf("after removal: %v", ids)
			}
			if name != "overlay2" {
				return
			}
			links := filepath.Join(root, "overlay2", "l")
			if n := len(listEntries(t, links)); n != 1 {
				t.Fatalf("%d short links, want 1", n)
			}
			// A link left pointing at a layer that is gone goes at reopen.
			os.Symlink("../gone/diff", filepath.Join(links, "DANGLING"))
			if _, err := New(root, name); err != nil {
				t.Fatal(err)
			}
			if got := listEntries(t, links); len(got) != 1 || got[0] == "DANGLING" {
				t.Fatalf("short links after reopen: %v", got)
			}
			if _, err := d.Mount("a"); err != nil {
				t.Fatal(err)
			}
			d.Unmount("a")
		})
	}
}

func listEntries(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
