package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallTmpfs mounts a tmpfs of size bytes (rounded up to pages) on a fresh
// directory and unmounts it when t ends: a disk a test can fill. Needs root.
func SmallTmpfs(t testing.TB, size int) string {
	t.Helper()
	RequireRoot(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// FillDisk writes a file in dir until its file system is full and returns
// the file's path; removing it frees the space again. It gives up (failing
// t) after max bytes.
func FillDisk(t testing.TB, dir string, max int) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for n := 0; n <= max; n += len(buf) {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return f.Name()
		}
	}
	t.Fatalf("%s: wrote %d bytes without filling the disk", filepath.Dir(f.Name()), max)
	return ""
}
