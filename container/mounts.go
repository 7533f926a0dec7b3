package container

import (
	"os"

	"github.com/docker/docker/api/types/mount"
)

// MountPoint is one of the container's mounts as decided at create time
// (from -v, --mount, --volumes-from, the image's VOLUME): the first fields
// are what inspect's Mounts shows, the rest how the start makes it.
type MountPoint struct {
	Type        mount.Type
	Name        string `json:",omitempty"` // the volume's
	Source      string // host path; a volume's data directory
	Destination string
	Driver      string `json:",omitempty"`
	Mode        string
	RW          bool
	Propagation mount.Propagation

	// CopyData fills an empty volume from the image's content at the
	// destination when the container starts (not with volume-nocopy).
	CopyData bool `json:",omitempty"`
	// NonRecursive binds only the source, not the mounts below it.
	NonRecursive bool `json:",omitempty"`
	// ReadOnlyNonRecursive makes only the bind itself read-only (API
	// before 1.44, or BindOptions.ReadOnlyNonRecursive);
	// ReadOnlyForceRecursive fails the start where the kernel cannot make
	// the mounts below read-only too.
	ReadOnlyNonRecursive   bool `json:",omitempty"`
	ReadOnlyForceRecursive bool `json:",omitempty"`
	// Subpath is the directory of the volume that is mounted.
	Subpath string `json:",omitempty"`
	// TmpfsSize and TmpfsMode are a tmpfs mount's size (bytes, 0 no
	// limit) and mode of its root (0: 1777).
	TmpfsSize int64       `json:",omitempty"`
	TmpfsMode os.FileMode `json:",omitempty"`
	// ImageID is an image mount's image ("sha256:..."), resolved from
	// its source at create; Source keeps the reference as given.
	ImageID string `json:",omitempty"`
	// Spec is the --mount as given, for the record.
	Spec *mount.Mount `json:",omitempty"`
}

// IsVolume reports whether the mount point is a volume's.
func (m *MountPoint) IsVolume() bool { return m.Type == mount.TypeVolume }
