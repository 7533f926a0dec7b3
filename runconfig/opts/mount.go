package opts

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-units"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ParseMounts reads --mount values: comma-separated key=value fields
// (CSV-quoted where a value holds a comma), as docker's CLI takes them:
// type, source|src, target|destination|dst, readonly|ro, consistency,
// bind-propagation, bind-nonrecursive, bind-recursive
// (enabled|disabled|writable|readonly), bind-create-mountpoint,
// volume-driver, volume-label, volume-nocopy, volume-opt, volume-subpath,
// tmpfs-size, tmpfs-mode, image-subpath.
func ParseMounts(values []string) ([]mount.Mount, error) {
	var out []mount.Mount
	for _, v := range values {
		m, err := parseMount(v)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid argument %q for \"--mount\" flag: %w", v, err))
		}
		out = append(out, m)
	}
	return out, nil
}

func parseBool(key, val string, hasVal bool) (bool, error) {
	if !hasVal {
		return true, nil
	}
	switch strings.ToLower(val) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, fmt.Errorf("invalid value for %s: %s", key, val)
}

func parseMount(value string) (mount.Mount, error) {
	fields, err := csv.NewReader(strings.NewReader(value)).Read()
	if err != nil {
		return mount.Mount{}, err
	}
	m := mount.Mount{Type: mount.TypeVolume}
	bind := func() *mount.BindOptions {
		if m.BindOptions == nil {
			m.BindOptions = &mount.BindOptions{}
		}
		return m.BindOptions
	}
	vol := func() *mount.VolumeOptions {
		if m.VolumeOptions == nil {
			m.VolumeOptions = &mount.VolumeOptions{}
		}
		return m.VolumeOptions
	}
	tmpfs := func() *mount.TmpfsOptions {
		if m.TmpfsOptions == nil {
			m.TmpfsOptions = &mount.TmpfsOptions{}
		}
		return m.TmpfsOptions
	}
	for _, f := range fields {
		key, val, hasVal := strings.Cut(f, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !hasVal {
			switch key {
			case "readonly", "ro", "volume-nocopy", "bind-nonrecursive":
			default:
				return m, fmt.Errorf("invalid field '%s' must be a key=value pair", f)
			}
		}
		switch key {
		case "type":
			m.Type = mount.Type(strings.ToLower(val))
		case "source", "src":
			m.Source = val
		case "target", "dst", "destination":
			m.Target = val
		case "readonly", "ro":
			if m.ReadOnly, err = parseBool(key, val, hasVal); err != nil {
				return m, err
			}
		case "consistency":
			m.Consistency = mount.Consistency(strings.ToLower(val))
		case "bind-propagation":
			bind().Propagation = mount.Propagation(strings.ToLower(val))
		case "bind-nonrecursive":
			if bind().NonRecursive, err = parseBool(key, val, hasVal); err != nil {
				return m, err
			}
		case "bind-recursive":
			switch val {
			case "enabled":
			case "disabled":
				bind().NonRecursive = true
			case "writable":
				bind().ReadOnlyNonRecursive = true
			case "readonly":
				bind().ReadOnlyForceRecursive = true
			default:
				return m, fmt.Errorf(`invalid value for %s: %s (must be "enabled", "disabled", "writable", or "readonly")`, key, val)
			}
		case "bind-create-mountpoint":
			if bind().CreateMountpoint, err = parseBool(key, val, hasVal); err != nil {
				return m, err
			}
		case "volume-nocopy":
			if vol().NoCopy, err = parseBool(key, val, hasVal); err != nil {
				return m, err
			}
		case "volume-subpath":
			vol().Subpath = val
		case "volume-driver":
			if vol().DriverConfig == nil {
				vol().DriverConfig = &mount.Driver{}
			}
			vol().DriverConfig.Name = val
		case "volume-label":
			k, lv, _ := strings.Cut(val, "=")
			if vol().Labels == nil {
				vol().Labels = map[string]string{}
			}
			vol().Labels[k] = lv
		case "volume-opt":
			k, ov, _ := strings.Cut(val, "=")
			if vol().DriverConfig == nil {
				vol().DriverConfig = &mount.Driver{}
			}
			if vol().DriverConfig.Options == nil {
				vol().DriverConfig.Options = map[string]string{}
			}
			vol().DriverConfig.Options[k] = ov
		case "image-subpath":
			if m.ImageOptions == nil {
				m.ImageOptions = &mount.ImageOptions{}
			}
			m.ImageOptions.Subpath = val
		case "tmpfs-size":
			n, err := units.RAMInBytes(val)
			if err != nil {
				return m, fmt.Errorf("invalid value for %s: %s", key, val)
			}
			tmpfs().SizeBytes = n
		case "tmpfs-mode":
			n, err := strconv.ParseUint(val, 8, 32)
			if err != nil {
				return m, fmt.Errorf("invalid value for %s: %s", key, val)
			}
			tmpfs().Mode = fileModeOf(uint32(n))
		default:
			return m, fmt.Errorf("unexpected key '%s' in '%s'", key, f)
		}
	}
	if m.Target == "" {
		return m, fmt.Errorf("target is required")
	}
	switch {
	case m.BindOptions != nil && m.Type != mount.TypeBind:
		return m, fmt.Errorf("cannot mix 'bind-*' options with mount type '%s'", m.Type)
	case m.VolumeOptions != nil && m.Type != mount.TypeVolume:
		return m, fmt.Errorf("cannot mix 'volume-*' options with mount type '%s'", m.Type)
	case m.TmpfsOptions != nil && m.Type != mount.TypeTmpfs:
		return m, fmt.Errorf("cannot mix 'tmpfs-*' options with mount type '%s'", m.Type)
	case m.ImageOptions != nil && m.Type != mount.TypeImage:
		return m, fmt.Errorf("cannot mix 'image-*' options with mount type '%s'", m.Type)
	}
	return m, nil
}

// fileModeOf is chmod bits as an os.FileMode.
func fileModeOf(v uint32) os.FileMode {
	m := os.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if v&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if v&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}
