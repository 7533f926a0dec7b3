package daemon

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/internal/testenv"
)

func TestBackingFilesystem(t *testing.T) {
	if got := backingFilesystem("/proc"); got != "<unknown>" {
		t.Errorf("/proc: %q, want <unknown> (Docker has no name for procfs)", got)
	}
	if got := backingFilesystem("/no/such/dir"); got != "<unknown>" {
		t.Errorf("missing dir: %q", got)
	}
	testenv.RequireRoot(t)
	dir := t.TempDir()
	for fstype, want := range map[string]string{"tmpfs": "tmpfs", "ramfs": "ramfs"} {
		mnt := filepath.Join(dir, fstype)
		if err := unix.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(fstype, mnt, fstype, 0, ""); err != nil {
			t.Fatalf("mount %s: %v", fstype, err)
		}
		got := backingFilesystem(mnt)
		unix.Unmount(mnt, unix.MNT_DETACH)
		if got != want {
			t.Errorf("%s: %q, want %q", fstype, got, want)
		}
	}
	// The magic numbers of ext4 and xfs as Docker names them.
	if fsNames[unix.EXT4_SUPER_MAGIC] != "extfs" || fsNames[unix.XFS_SUPER_MAGIC] != "xfs" ||
		fsNames[unix.BTRFS_SUPER_MAGIC] != "btrfs" || fsNames[unix.OVERLAYFS_SUPER_MAGIC] != "overlayfs" {
		t.Errorf("names: %v", fsNames)
	}
}
