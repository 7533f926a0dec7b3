package oci

import (
	"path"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// NamespaceShare says whose namespace of one kind a container has (Docker's
// --ipc, --pid, --uts). The zero value is a namespace of its own.
type NamespaceShare struct {
	// Host: the host's namespace, so the spec asks for none. It is what
	// the user asked for (--pid host, --ipc host, --uts host), as in Docker.
	Host bool
	// Path joins an existing namespace, another container's, by its
	// /proc/<pid>/ns/<type> file (--ipc container:X, --pid container:X).
	Path string
}

// ShmDestination is where a container's shared memory filesystem goes.
const ShmDestination = "/dev/shm"

// ShmMountOptions are /dev/shm's options whatever its origin: no device,
// setuid or executable file is usable from shared memory.
var ShmMountOptions = []string{"nosuid", "nodev", "noexec"}

// applyShm makes /dev/shm among the default mounts what the IPC mode says:
// none at all (--ipc none), a host directory bound (shareable: the tmpfs
// the daemon mounted for it; container:X: X's; host: the host's /dev/shm),
// or the default, a tmpfs of the container's own (private). A mount of the
// user's at /dev/shm or above still wins over the result (mergeMounts).
func applyShm(defaults []specs.Mount, o SpecOptions) []specs.Mount {
	i := slices.IndexFunc(defaults, func(m specs.Mount) bool { return path.Clean(m.Destination) == ShmDestination })
	if i < 0 {
		return defaults
	}
	out := slices.Clone(defaults)
	switch {
	case o.NoShm:
		return slices.Delete(out, i, i+1)
	case o.ShmSource != "":
		out[i] = specs.Mount{
			Destination: ShmDestination,
			Type:        "bind",
			Source:      o.ShmSource,
			// Not recursive: only the shared memory filesystem itself,
			// nothing that may be mounted below it on the host.
			Options: append([]string{"bind", "rprivate"}, ShmMountOptions...),
		}
	}
	return out
}
