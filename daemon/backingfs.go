package daemon

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fsNames are the names `docker info` gives filesystems (Docker's, by
// their statfs magic numbers) as "Backing Filesystem".
var fsNames = map[int64]string{
	0x61756673: "aufs",
	0x9123683e: "btrfs",
	0x28cd3d45: "cramfs",
	0xf15f:     "ecryptfs",
	0xef53:     "extfs", // ext2, ext3 and ext4 share it
	0xf2f52010: "f2fs",
	0x65735546: "fuse",
	0x47504653: "gpfs",
	0x72b6:     "jffs2",
	0x3153464a: "jfs",
	0x6969:     "nfs",
	0x794c7630: "overlayfs",
	0x858458f6: "ramfs",
	0x52654973: "reiserfs",
	0x517b:     "smb",
	0x73717368: "squashfs",
	0x01021994: "tmpfs",
	0xa501fcf5: "vxfs",
	0x58465342: "xfs",
	0x2fc12fc1: "zfs",
}

// backingFilesystem names the filesystem that holds dir, or "<unknown>"
// (Docker's word) for one it has no name for or that cannot be read.
func backingFilesystem(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "<unknown>"
	}
	if name, ok := fsNames[int64(st.Type)&0xffffffff]; ok {
		return name
	}
	return "<unknown>"
}

// graphBackingFilesystem is the filesystem of the storage driver's
// directory, or of the data root while the driver has none yet (as Docker
// looks at its overlay2 directory or, lacking it, the data root).
func (d *Daemon) graphBackingFilesystem() string {
	dir := filepath.Join(d.cfg.Root, "graph", d.images.Driver().Name())
	if _, err := os.Stat(dir); err != nil {
		dir = d.cfg.Root
	}
	return backingFilesystem(dir)
}
