package image

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/atomicfile"
)

// smallFS mounts a tmpfs of size bytes for the test.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file until the filesystem is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last partial block too.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	if free := freeBytes(t, filepath.Dir(path)); free != 0 {
		t.Fatalf("%d bytes still free", free)
	}
}

func freeBytes(t *testing.T, path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

func randomTar(t *testing.T, name string, size int) []byte {
	body := make([]byte, size)
	rand.New(rand.NewSource(int64(size))).Read(body)
	return mkTar(tarFile{name, string(body)})
}

// rmi works on a full filesystem, for an image (it frees its space) and
// for a tag alone (repositories.json is rewritten through its spare),
// before and after a restart.
func TestDeleteOnFullDisk(t *testing.T) {
	root := smallFS(t, "24m")
	e := newEnvAt(t, root, "")
	s := e.store
	big1, err := s.Import(ctx, bytes.NewReader(randomTar(t, "big1", 4<<20)), "big1", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, bytes.NewReader(randomTar(t, "big2", 4<<20)), "big2", ImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	small, err := s.Import(ctx, bytes.NewReader(mkTar(tarFile{"s", "s"})), "small:a", ImportOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"small:b", "small:c"} {
		if err := s.Tag("small:a", tag); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, filepath.Join(root, "filler"))

	// Only a tag goes: no space is freed, the spare pays.
	if _, err := s.Delete("small:a", false, nil); err != nil {
		t.Fatalf("untag on a full disk: %v", err)
	}
	// An image goes: its space is freed.
	if _, err := s.Delete("big1", false, nil); err != nil {
		t.Fatalf("rmi on a full disk: %v", err)
	}
	if free := freeBytes(t, root); free < 4<<20 {
		t.Errorf("%d bytes free after rmi of a 4 MiB image", free)
	}
	if _, err := s.Get(big1.ID.String()); err == nil {
		t.Error("image still there")
	}
	if _, err := os.Stat(atomicfile.SpareName(s.tagsPath())); err != nil {
		t.Errorf("repositories.json has no spare: %v", err)
	}

	// Full again, then a restart: rmi still works.
	fill(t, filepath.Join(root, "filler2"))
	e.reopen(t)
	s = e.store
	if _, err := s.Delete("small:b", false, nil); err != nil {
		t.Fatalf("untag on a full disk after restart: %v", err)
	}
	if _, err := s.Delete("big2", false, nil); err != nil {
		t.Fatalf("rmi on a full disk after restart: %v", err)
	}
	if free := freeBytes(t, root); free < 4<<20 {
		t.Errorf("%d bytes free after rmi of a 4 MiB image", free)
	}
	e.reopen(t)
	got, err := e.store.Get(small.ID.String())
	if err != nil || len(got.RepoTags) != 1 || got.RepoTags[0] != "small:c" {
		t.Fatalf("small after restart: %+v %v", got, err)
	}
	if _, err := e.store.Get("big2"); err == nil {
		t.Error("big2 back after restart")
	}
}
