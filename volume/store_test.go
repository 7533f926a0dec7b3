package volume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/filters"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestStoreCreateListRemove(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Create("data", "", nil, map[string]string{"a": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Driver != "local" || s.Path("data") != filepath.Join(root, "data", "_data") {
		t.Fatalf("got %+v", v)
	}
	if _, err := os.Stat(s.Path("data")); err != nil {
		t.Fatal(err)
	}
	// Create is idempotent.
	if _, err := s.Create("data", "local", nil, nil); err != nil {
		t.Fatal(err)
	}
	anon, err := s.Create("", "", nil, nil)
	if err != nil || len(anon.Name) != 64 || !anon.Anonymous() {
		t.Fatalf("anonymous: %+v %v", anon, err)
	}
	for _, bad := range []string{"a", "a/b", "../x", "-x"} {
		if _, err := s.Create(bad, "", nil, nil); !errdefs.IsInvalidParameter(err) {
			t.Errorf("Create(%q): %v, want invalid", bad, err)
		}
	}
	if _, err := s.Create("x2", "other", nil, nil); !errdefs.IsNotFound(err) {
		t.Errorf("unknown driver: %v", err)
	}

	list := func(f filters.Args) []string {
		vs, err := s.List(f)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, v := range vs {
			n = append(n, v.Name)
		}
		return n
	}
	if got := list(filters.NewArgs(filters.Arg("label", "a=1"))); len(got) != 1 || got[0] != "data" {
		t.Errorf("label filter: %v", got)
	}
	if got := list(filters.NewArgs(filters.Arg("name", "dat"))); len(got) != 1 {
		t.Errorf("name filter: %v", got)
	}
	if err := s.Reference("data", "ctr1"); err != nil {
		t.Fatal(err)
	}
	if got := list(filters.NewArgs(filters.Arg("dangling", "true"))); len(got) != 1 || got[0] != anon.Name {
		t.Errorf("dangling filter: %v", got)
	}
	err = s.Remove("data", false)
	if !errdefs.IsConflict(err) || !strings.Contains(err.Error(), "volume is in use - [ctr1]") {
		t.Errorf("in use: %v", err)
	}
	// The store reopens with its volumes.
	s2, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Get("data"); err != nil {
		t.Fatal(err)
	}
	s.Release("data", "ctr1")
	if err := s.Remove("data", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "data")); !os.IsNotExist(err) {
		t.Errorf("data left: %v", err)
	}
	if err := s.Remove("data", false); !errdefs.IsNotFound(err) {
		t.Errorf("second remove: %v", err)
	}
	if err := s.Remove("data", true); err != nil {
		t.Errorf("force remove of a missing volume: %v", err)
	}
}

func TestStorePrune(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	anon, _ := s.Create("", "", nil, nil)
	used, _ := s.Create("", "", nil, nil)
	_ = s.Reference(used.Name, "c")
	if _, err := s.Create("named", "", nil, map[string]string{"keep": "yes"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Path(anon.Name), "f"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	names, freed, err := s.Prune(filters.NewArgs(), false)
	if err != nil || len(names) != 1 || names[0] != anon.Name || freed != 1000 {
		t.Fatalf("prune: %v %d %v", names, freed, err)
	}
	names, _, _ = s.Prune(filters.NewArgs(filters.Arg("label!", "keep")), true)
	if len(names) != 0 {
		t.Fatalf("label! kept nothing: %v", names)
	}
	names, _, _ = s.Prune(filters.NewArgs(filters.Arg("all", "1")), false)
	if len(names) != 1 || names[0] != "named" {
		t.Fatalf("prune all: %v", names)
	}
}

func TestLocalOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		ok   bool
	}{
		{nil, true},
		{map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1m"}, true},
		{map[string]string{"type": "none", "device": t.TempDir(), "o": "bind"}, true},
		{map[string]string{"type": "none", "device": "relative", "o": "bind"}, false},
		{map[string]string{"type": "tmpfs"}, false},
		{map[string]string{"foo": "bar"}, false},
		{map[string]string{"size": "1g"}, false},
	} {
		if err := (Local{}).Validate(tc.opts); (err == nil) != tc.ok {
			t.Errorf("%v: %v", tc.opts, err)
		}
	}
	flags, data := mountFlags("ro,size=64m,bind,mode=755")
	if data != "size=64m,mode=755" || flags == 0 {
		t.Errorf("mountFlags: %x %q", flags, data)
	}
}

func TestCopyUp(t *testing.T) {
	rootfs, vol := t.TempDir(), t.TempDir()
	src := filepath.Join(rootfs, "data")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "sub"), 0o750))
	must(os.WriteFile(filepath.Join(src, "sub", "f"), []byte("hello"), 0o640))
	must(os.Symlink("/etc/passwd", filepath.Join(src, "link")))
	must(os.Chown(filepath.Join(src, "sub", "f"), 1234, 5678))
	must(os.Chmod(src, 0o711))
	// A symlink in the image pointing out of the rootfs resolves inside.
	must(os.Symlink("/../../../../", filepath.Join(rootfs, "escape")))

	must(CopyUp(rootfs, "/data", vol))
	b, err := os.ReadFile(filepath.Join(vol, "sub", "f"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("content: %q %v", b, err)
	}
	fi, _ := os.Stat(filepath.Join(vol, "sub", "f"))
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	if uid, gid := owner(t, filepath.Join(vol, "sub", "f")); uid != 1234 || gid != 5678 {
		t.Errorf("owner %d:%d", uid, gid)
	}
	if l, _ := os.Readlink(filepath.Join(vol, "link")); l != "/etc/passwd" {
		t.Errorf("link %q", l)
	}
	if fi, _ := os.Stat(vol); fi.Mode().Perm() != 0o711 {
		t.Errorf("root mode %v", fi.Mode())
	}
	// A volume with content is not filled again.
	must(os.Remove(filepath.Join(vol, "link")))
	must(CopyUp(rootfs, "/data", vol))
	if _, err := os.Lstat(filepath.Join(vol, "link")); !os.IsNotExist(err) {
		t.Errorf("filled twice")
	}
	// Through the escaping link: the host's / is never copied.
	vol2 := t.TempDir()
	must(CopyUp(rootfs, "/escape/data", vol2))
	if _, err := os.Stat(filepath.Join(vol2, "sub", "f")); err != nil {
		t.Errorf("escape link not resolved inside the rootfs: %v", err)
	}
}
