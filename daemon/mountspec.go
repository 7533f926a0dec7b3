package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/mount"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/volume"
)

// Mount points are decided at create time from -v (HostConfig.Binds),
// --mount (HostConfig.Mounts), --volumes-from and the config's and
// image's VOLUMEs, in Docker's order; the functions here read the specs
// and check them, without touching the volume store.

func invalidMount(typ mount.Type, format string, args ...any) error {
	return errdefs.InvalidParameter(fmt.Errorf("invalid mount config for type %q: %s", typ, fmt.Sprintf(format, args...)))
}

// otherTypesOptions refuses the options of a mount type other than m's
// (Docker's "field ...Options must not be specified").
func otherTypesOptions(m mount.Mount) error {
	switch {
	case m.BindOptions != nil && m.Type != mount.TypeBind:
		return invalidMount(m.Type, "field BindOptions must not be specified")
	case m.VolumeOptions != nil && m.Type != mount.TypeVolume:
		return invalidMount(m.Type, "field VolumeOptions must not be specified")
	case m.TmpfsOptions != nil && m.Type != mount.TypeTmpfs:
		return invalidMount(m.Type, "field TmpfsOptions must not be specified")
	}
	return nil
}

func checkDestination(typ mount.Type, dst string) (string, error) {
	if dst == "" {
		return "", invalidMount(typ, "field Target must not be empty")
	}
	if !filepath.IsAbs(dst) {
		return "", invalidMount(typ, "invalid mount path: '%s' mount path must be absolute", dst)
	}
	if filepath.Clean(dst) == "/" {
		return "", errdefs.InvalidParameter(fmt.Errorf("invalid specification: destination can't be '/'"))
	}
	return filepath.Clean(dst), nil
}

// parseBindSpec reads one -v SOURCE:DESTINATION[:MODE]: an absolute
// SOURCE is a bind, any other a named volume (made when missing). The
// mode is kept as written, as inspect shows it. roNonRecursive is the
// API before 1.44, whose "ro" covered the bind only.
func parseBindSpec(b string, roNonRecursive bool) (*container.MountPoint, error) {
	parts := strings.Split(b, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s'", b))
	}
	if !filepath.IsAbs(parts[1]) {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s': invalid mount config for type \"bind\": invalid mount path: '%s' mount path must be absolute", b, parts[1]))
	}
	if filepath.Clean(parts[1]) == "/" {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s': invalid specification: destination can't be '/'", b))
	}
	mp := &container.MountPoint{Destination: filepath.Clean(parts[1]), RW: true}
	if filepath.IsAbs(parts[0]) {
		mp.Type = mount.TypeBind
		mp.Source = filepath.Clean(parts[0])
		mp.Propagation = mount.PropagationRPrivate
	} else {
		if err := volume.ValidateName(parts[0]); err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s': %w", b, err))
		}
		mp.Type = mount.TypeVolume
		mp.Name = parts[0]
		mp.Driver = volume.DefaultDriver
		mp.CopyData = true
		mp.Mode = "z" // Docker's default label mode, as its inspect shows
	}
	if len(parts) == 3 {
		mp.Mode = parts[2]
		for _, o := range strings.Split(parts[2], ",") {
			switch o {
			case "ro":
				mp.RW = false
				mp.ReadOnlyNonRecursive = roNonRecursive
			case "rw", "z", "Z", "":
				// z/Z: SELinux relabelling, nothing to do without SELinux.
			case "nocopy":
				if mp.Type != mount.TypeVolume {
					return nil, errdefs.InvalidParameter(fmt.Errorf("invalid mode: %s", parts[2]))
				}
				mp.CopyData = false
			case "private", "rprivate", "shared", "rshared", "slave", "rslave":
				if mp.Type != mount.TypeBind {
					return nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s': propagation is only for binds", b))
				}
				mp.Propagation = mount.Propagation(o)
			default:
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid mode: %s", parts[2]))
			}
		}
	}
	return mp, nil
}

// parseMountSpec reads one --mount (HostConfig.Mounts entry), with
// Docker's checks and messages. A bind's source must exist (unless
// BindOptions.CreateMountpoint).
func parseMountSpec(m mount.Mount, roNonRecursive bool) (*container.MountPoint, error) {
	dst, err := checkDestination(m.Type, m.Target)
	if err != nil {
		return nil, err
	}
	spec := m
	mp := &container.MountPoint{Type: m.Type, Destination: dst, RW: !m.ReadOnly, Spec: &spec}
	switch m.Type {
	case mount.TypeBind:
		if err := otherTypesOptions(m); err != nil {
			return nil, err
		}
		if m.Source == "" {
			return nil, invalidMount(m.Type, "field Source must not be empty")
		}
		if !filepath.IsAbs(m.Source) {
			return nil, invalidMount(m.Type, "invalid mount path: '%s' mount path must be absolute", m.Source)
		}
		mp.Source = filepath.Clean(m.Source)
		mp.Propagation = mount.PropagationRPrivate
		create := false
		if o := m.BindOptions; o != nil {
			if o.Propagation != "" {
				switch o.Propagation {
				case mount.PropagationPrivate, mount.PropagationRPrivate, mount.PropagationShared,
					mount.PropagationRShared, mount.PropagationSlave, mount.PropagationRSlave:
				default:
					return nil, invalidMount(m.Type, "invalid propagation mode: %s", o.Propagation)
				}
				mp.Propagation = o.Propagation
			}
			mp.NonRecursive = o.NonRecursive
			if o.ReadOnlyNonRecursive && o.ReadOnlyForceRecursive {
				return nil, invalidMount(m.Type, "cannot set both ReadOnlyNonRecursive and ReadOnlyForceRecursive")
			}
			if (o.ReadOnlyNonRecursive || o.ReadOnlyForceRecursive) && !m.ReadOnly {
				return nil, invalidMount(m.Type, "must set ReadOnly when ReadOnlyNonRecursive or ReadOnlyForceRecursive is set")
			}
			if o.ReadOnlyForceRecursive && o.NonRecursive {
				return nil, invalidMount(m.Type, "ReadOnlyForceRecursive cannot be set with NonRecursive")
			}
			if o.ReadOnlyForceRecursive && o.Propagation != "" && o.Propagation != mount.PropagationRPrivate {
				return nil, invalidMount(m.Type, "read-only force recursive mounts must have rprivate propagation")
			}
			mp.ReadOnlyNonRecursive = o.ReadOnlyNonRecursive
			mp.ReadOnlyForceRecursive = o.ReadOnlyForceRecursive
			create = o.CreateMountpoint
		}
		if m.ReadOnly && roNonRecursive && !mp.ReadOnlyForceRecursive {
			mp.ReadOnlyNonRecursive = true
		}
		if _, err := os.Stat(mp.Source); err != nil {
			if !os.IsNotExist(err) || !create {
				return nil, invalidMount(m.Type, "bind source path does not exist: %s", mp.Source)
			}
		}
	case mount.TypeVolume:
		if err := otherTypesOptions(m); err != nil {
			return nil, err
		}
		mp.Driver = volume.DefaultDriver
		mp.Mode = "z"
		mp.CopyData = true
		if m.Source != "" {
			if err := volume.ValidateName(m.Source); err != nil {
				return nil, invalidMount(m.Type, "%v", err)
			}
			mp.Name = m.Source
		}
		if o := m.VolumeOptions; o != nil {
			mp.CopyData = !o.NoCopy
			if o.DriverConfig != nil && o.DriverConfig.Name != "" {
				mp.Driver = o.DriverConfig.Name
			}
			if o.Subpath != "" {
				sp := filepath.Clean(o.Subpath)
				if filepath.IsAbs(sp) || sp == ".." || strings.HasPrefix(sp, "../") {
					return nil, invalidMount(m.Type, "subpath must be a relative path within the volume")
				}
				mp.Subpath = sp
			}
		}
		if mp.Driver != volume.DefaultDriver {
			return nil, errdefs.NotFound(fmt.Errorf("error looking up volume plugin %s: plugin %q not found", mp.Driver, mp.Driver))
		}
	case mount.TypeTmpfs:
		if m.Source != "" {
			return nil, invalidMount(m.Type, "field Source must not be specified")
		}
		if err := otherTypesOptions(m); err != nil {
			return nil, err
		}
		if o := m.TmpfsOptions; o != nil {
			if o.SizeBytes < 0 {
				return nil, invalidMount(m.Type, "invalid tmpfs size: %d", o.SizeBytes)
			}
			mp.TmpfsSize = o.SizeBytes
			mp.TmpfsMode = o.Mode
			if len(o.Options) > 0 {
				return nil, errdefs.NotImplemented(fmt.Errorf("tmpfs mount options (TmpfsOptions.Options) are not implemented by this engine"))
			}
		}
	case mount.TypeImage:
		if err := otherTypesOptions(m); err != nil {
			return nil, err
		}
		if m.Source == "" {
			return nil, invalidMount(m.Type, "field Source must not be empty")
		}
		mp.Source = m.Source
		// Read-only whatever was asked, as Docker makes image mounts.
		mp.RW = false
		mp.Propagation = mount.PropagationRPrivate
		if o := m.ImageOptions; o != nil && o.Subpath != "" {
			sp, err := cleanSubpath(o.Subpath)
			if err != nil {
				return nil, invalidMount(m.Type, "%v", err)
			}
			mp.Subpath = sp
		}
	case "":
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid mount config: must specify a mount type"))
	case mount.TypeNamedPipe, mount.TypeCluster:
		return nil, errdefs.NotImplemented(fmt.Errorf("mount type %q is not implemented by this engine", m.Type))
	default:
		return nil, invalidMount(m.Type, "mount type unknown")
	}
	return mp, nil
}

// cleanSubpath checks an image mount's subpath: relative, clean and
// without "..", so that it names a directory inside the image however
// it is joined (volumeSubpath confines it again at start).
func cleanSubpath(sub string) (string, error) {
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("subpath must be a relative path within the image: %s", sub)
	}
	for _, part := range strings.Split(sub, "/") {
		if part == ".." {
			return "", fmt.Errorf("subpath must not contain '..': %s", sub)
		}
	}
	clean := filepath.Clean(sub)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// parseVolumesFrom reads one --volumes-from CONTAINER[:ro|rw].
func parseVolumesFrom(spec string) (id, mode string, err error) {
	if spec == "" {
		return "", "", errdefs.InvalidParameter(fmt.Errorf("volumes-from specification cannot be an empty string"))
	}
	id, mode, _ = strings.Cut(spec, ":")
	switch mode {
	case "", "ro", "rw", "z", "Z":
	default:
		return "", "", errdefs.InvalidParameter(fmt.Errorf("invalid mode for volumes-from: %s", mode))
	}
	return id, mode, nil
}
