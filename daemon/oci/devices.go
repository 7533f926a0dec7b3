package oci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Device is one --device mapping (HostConfig.Devices): a host device node,
// or a directory of them, made at PathInContainer and allowed
// CgroupPermissions (r, w, m) in the container's device cgroup.
type Device struct {
	PathOnHost, PathInContainer, CgroupPermissions string
}

// errNotADevice is what a path that is neither a character nor a block
// device gives (the wording of Docker's runtime).
var errNotADevice = errors.New("not a device node")

// DevicesFromPath reads the host device(s) a mapping names: the node the
// host path is (a symlink to one is followed), or every node under it
// when it is a directory (as /dev/snd). They are returned at their place in
// the container with the cgroup rules that allow them. A host path that is
// missing or holds no device is refused as Docker refuses it, as an
// invalid parameter (the daemon checks it at create; here it is read
// again at start, the host having perhaps changed since).
func DevicesFromPath(d Device) ([]specs.LinuxDevice, []specs.LinuxDeviceCgroup, error) {
	inContainer, access := d.PathInContainer, d.CgroupPermissions
	if inContainer == "" {
		inContainer = d.PathOnHost
	}
	if access == "" {
		access = "rwm"
	}
	host := d.PathOnHost
	if fi, err := os.Lstat(host); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if resolved, err := filepath.EvalSymlinks(host); err == nil {
			host = resolved
		}
	}
	var devs []specs.LinuxDevice
	dev, err := deviceAt(host)
	if err == nil {
		dev.Path = inContainer
		devs = append(devs, dev)
	} else if errors.Is(err, errNotADevice) {
		if fi, serr := os.Stat(host); serr == nil && fi.IsDir() {
			_ = filepath.WalkDir(host, func(p string, _ fs.DirEntry, werr error) error {
				if werr != nil {
					return nil // a node vanishing under us is skipped
				}
				if dev, err := deviceAt(p); err == nil {
					dev.Path = filepath.Join(inContainer, strings.TrimPrefix(p, host))
					devs = append(devs, dev)
				}
				return nil
			})
		}
	}
	if len(devs) == 0 {
		return nil, nil, errdefs.InvalidParameter(fmt.Errorf("error gathering device information while adding custom device %q: %s", d.PathOnHost, err))
	}
	rules := make([]specs.LinuxDeviceCgroup, 0, len(devs))
	for _, dev := range devs {
		major, minor := dev.Major, dev.Minor
		rules = append(rules, specs.LinuxDeviceCgroup{Allow: true, Type: dev.Type, Major: &major, Minor: &minor, Access: access})
	}
	return devs, rules, nil
}

// deviceAt describes the device node at p, not following a symlink.
func deviceAt(p string) (specs.LinuxDevice, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return specs.LinuxDevice{}, err
	}
	var typ string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		typ = "c"
	case unix.S_IFBLK:
		typ = "b"
	default:
		return specs.LinuxDevice{}, errNotADevice
	}
	mode := os.FileMode(st.Mode &^ unix.S_IFMT)
	uid, gid := st.Uid, st.Gid
	return specs.LinuxDevice{
		Path:     p,
		Type:     typ,
		Major:    int64(unix.Major(st.Rdev)),
		Minor:    int64(unix.Minor(st.Rdev)),
		FileMode: &mode,
		UID:      &uid,
		GID:      &gid,
	}, nil
}

// userDevices gathers the devices of every mapping.
func userDevices(ds []Device) ([]specs.LinuxDevice, []specs.LinuxDeviceCgroup, error) {
	var devs []specs.LinuxDevice
	var rules []specs.LinuxDeviceCgroup
	for _, d := range ds {
		dv, r, err := DevicesFromPath(d)
		if err != nil {
			return nil, nil, err
		}
		devs = append(devs, dv...)
		rules = append(rules, r...)
	}
	return devs, rules, nil
}

// mergeDevices is base with over laid on it: a device of over replaces
// one of base at the same path.
func mergeDevices(base, over []specs.LinuxDevice) []specs.LinuxDevice {
	if len(over) == 0 {
		return base
	}
	taken := map[string]bool{}
	for _, d := range over {
		taken[d.Path] = true
	}
	out := make([]specs.LinuxDevice, 0, len(base)+len(over))
	for _, d := range base {
		if !taken[d.Path] {
			out = append(out, d)
		}
	}
	return append(out, over...)
}

// deviceCgroupRule is a --device-cgroup-rule as Docker reads it: a type
// (a, b or c), major:minor (a number or *), and the access (r, w, m).
var deviceCgroupRule = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([acb]) ([0-9]+|\*):([0-9]+|\*) ([rwm]{1,3})$`)
})

// ParseDeviceCgroupRule reads one --device-cgroup-rule ("c 1:3 rwm") as
// the device cgroup rule that allows it; a malformed one is refused with
// Docker's message.
func ParseDeviceCgroupRule(rule string) (specs.LinuxDeviceCgroup, error) {
	m := deviceCgroupRule().FindStringSubmatch(rule)
	if m == nil {
		return specs.LinuxDeviceCgroup{}, errdefs.InvalidParameter(fmt.Errorf("invalid device cgroup rule format: '%s'", rule))
	}
	num := func(s string) (*int64, error) {
		if s == "*" {
			return nil, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid device cgroup rule format: '%s'", rule))
		}
		return &n, nil
	}
	major, err := num(m[2])
	if err != nil {
		return specs.LinuxDeviceCgroup{}, err
	}
	minor, err := num(m[3])
	if err != nil {
		return specs.LinuxDeviceCgroup{}, err
	}
	return specs.LinuxDeviceCgroup{Allow: true, Type: m[1], Major: major, Minor: minor, Access: m[4]}, nil
}
