package runconfig

// Pod places a container in a Kubernetes pod sandbox (package cri). The
// sandbox is not a container: the CRI pins its namespaces as files and
// writes its /etc files, and each of its containers joins them here, so no
// pause process is needed. An empty namespace path leaves that namespace
// to the container's modes (HostConfig: host, or one of its own).
type Pod struct {
	SandboxID string
	// Pinned namespace files (nsfs bind mounts) of the sandbox.
	NetNS, IPCNS, UTSNS string `json:",omitempty"`
	// PIDNS is the pod's shared PID namespace, when the pod asked for one.
	PIDNS string `json:",omitempty"`
	// Hostname is the pod's; the UTS namespace already carries it.
	Hostname string `json:",omitempty"`
	// ShmDir is the pod's /dev/shm, shared by its containers with its IPC
	// namespace.
	ShmDir string `json:",omitempty"`
	// Files are the pod's /etc files by name ("hostname", "hosts",
	// "resolv.conf"), bound in place of the ones the engine writes for a
	// container of its own.
	Files map[string]string `json:",omitempty"`
	// StrictGroups leaves the user's groups in the image's /etc/group out
	// of the processes' supplementary groups, for the container's process
	// and its execs (Kubernetes' SupplementalGroupsPolicy Strict).
	StrictGroups bool `json:",omitempty"`
}
