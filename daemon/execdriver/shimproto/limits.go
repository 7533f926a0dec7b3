package shimproto

import (
	"fmt"
	"path"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// A container's cgroups come in two levels (daemon/execdriver/shim/cgroups.go
// describes them): the limits cgroup, and the payload below it that the
// spec's cgroupsPath names. The shim creates and removes the limits cgroup;
// the driver removes it when the shim died first. Both derive its place
// from the spec here.

// LimitsCgroup describes the limits cgroup of a spec whose cgroupsPath names
// the payload, with the spec's resources. The device rules are among them:
// the kernel applies a parent's rules to its subtree too, and systemd (v1)
// moves a scope's processes up to its slice in every controller the slice
// itself does not use.
func LimitsCgroup(cgroupsPath string, useSystemd bool, r *cgroups.Resources) (*cgroups.Cgroup, error) {
	res := &cgroups.Resources{}
	if r != nil {
		cp := *r
		res = &cp
	}
	if useSystemd {
		slice, _, ok := strings.Cut(cgroupsPath, ":")
		if !ok || !strings.HasSuffix(slice, ".slice") {
			return nil, fmt.Errorf("systemd cgroupsPath %q: want slice:prefix:name", cgroupsPath)
		}
		return &cgroups.Cgroup{Name: slice, Parent: parentSlice(slice), Systemd: true, Resources: res}, nil
	}
	p := path.Clean(cgroupsPath)
	if !path.IsAbs(p) || path.Dir(p) == "/" {
		return nil, fmt.Errorf("cgroupsPath %q: want an absolute path two levels deep or more", cgroupsPath)
	}
	return &cgroups.Cgroup{Path: path.Dir(p), Resources: res}, nil
}

// PayloadRelPath is the payload cgroup's path below each hierarchy's root.
func PayloadRelPath(cgroupsPath string, useSystemd bool) (string, error) {
	if !useSystemd {
		return path.Clean(cgroupsPath), nil
	}
	parts := strings.Split(cgroupsPath, ":")
	if len(parts) != 3 {
		return "", fmt.Errorf("systemd cgroupsPath %q: want slice:prefix:name", cgroupsPath)
	}
	dir, err := systemd.ExpandSlice(parts[0])
	if err != nil {
		return "", err
	}
	return path.Join(dir, parts[1]+"-"+parts[2]+".scope"), nil
}

// parentSlice is the slice that contains slice: "a-b-c.slice" is in
// "a-b.slice", "a.slice" in the root slice.
func parentSlice(slice string) string {
	name := strings.TrimSuffix(slice, ".slice")
	if i := strings.LastIndex(name, "-"); i > 0 {
		return name[:i] + ".slice"
	}
	return "-.slice"
}

// DestroyLimits removes the limits cgroup of a spec (the payload must be
// gone already). Removing one that does not exist is not an error.
func DestroyLimits(spec *specs.Spec, useSystemd bool) error {
	if spec == nil || spec.Linux == nil || spec.Linux.CgroupsPath == "" {
		return nil
	}
	cg, err := LimitsCgroup(spec.Linux.CgroupsPath, useSystemd, nil)
	if err != nil {
		return err
	}
	m, err := manager.New(cg)
	if err != nil {
		return err
	}
	return m.Destroy()
}
