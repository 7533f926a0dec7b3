package oci

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/pkg/errdefs"
)

// CgroupLayoutAnnotation, in a container's HostConfig.Annotations (`docker
// run --annotation io.sdengine.cgroup-layout=unified`), chooses the layout
// of the container's /sys/fs/cgroup. The only value is CgroupLayoutUnified:
// on a hybrid host (cgroup v1 controllers, cgroup2 at
// /sys/fs/cgroup/unified) the container gets the cgroup2 hierarchy alone
// at /sys/fs/cgroup, its own subtree there (its payload cgroup, the root
// of its cgroup namespace), as on a cgroup v2 host; systemd booting in it
// then runs in unified mode. On a v2 host it changes nothing (that is the
// layout already); on a v1 host without cgroup2 the start fails. The
// annotation is the one of the user's the runtime is given: the others
// stay in the record only (daemon/create.go).
const CgroupLayoutAnnotation = "io.sdengine.cgroup-layout"

// CgroupLayoutUnified is CgroupLayoutAnnotation's one value.
const CgroupLayoutUnified = "unified"

// ValidateCgroupLayout refuses a CgroupLayoutAnnotation value other than
// CgroupLayoutUnified (400).
func ValidateCgroupLayout(annotations map[string]string) error {
	v, ok := annotations[CgroupLayoutAnnotation]
	if ok && v != CgroupLayoutUnified {
		return errdefs.InvalidParameter(fmt.Errorf("invalid annotation %s=%q: the only cgroup layout is %q", CgroupLayoutAnnotation, v, CgroupLayoutUnified))
	}
	return nil
}

// setCgroupLayout passes the layout to the exec driver, which alone acts
// on it (daemon/execdriver/shim/cgroups.go); the value is the daemon's, a
// copy of it in o.Annotations is dropped.
func setCgroupLayout(s *specs.Spec, layout string) {
	delete(s.Annotations, CgroupLayoutAnnotation)
	if layout == CgroupLayoutUnified {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[CgroupLayoutAnnotation] = CgroupLayoutUnified
	}
}
