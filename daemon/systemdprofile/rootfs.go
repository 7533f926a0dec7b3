package systemdprofile

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultJournalRoot is the host's persistent journal; the profile shares
// a directory of it only when it exists.
const DefaultJournalRoot = "/var/log/journal"

// Rootfs describes where Prepare works.
type Rootfs struct {
	// Path is the container's mounted root filesystem.
	Path string
	// ReadOnly: the root is mounted read-only, so /etc/machine-id cannot be
	// written into it and is bound from StateDir instead.
	ReadOnly bool
	// StateDir is a host directory of the container's own (its record's).
	StateDir string
	// MachineID is the container's machine ID, 32 hex digits
	// (pkg/systemd.ContainerMachineID).
	MachineID string
	// JournalRoot is the host's journal directory; empty means
	// DefaultJournalRoot.
	JournalRoot string
	// HostOSRelease is the host's os-release; empty means /etc/os-release,
	// or /usr/lib/os-release when that is missing.
	HostOSRelease string
}

// Prepared is what Prepare made, for Apply to mount.
type Prepared struct {
	// MachineIDFile is a host file to bind at /etc/machine-id (read-only
	// roots only).
	MachineIDFile string
	// JournalDir is the host's journal directory of the container, to be
	// bound at the same path; empty when not shared.
	JournalDir string
	// RunHostDir is the container's /run/host (systemd's Container
	// Interface), to be bound read-only; empty when the user mounted
	// /run/host, above it or below it.
	RunHostDir string
	// HostEnv are the container_host_* variables of the host's os-release.
	HostEnv []string
}

// Prepare writes the container's machine ID, makes its journal directory
// on the host and writes its /run/host files. mounts are the built spec's mounts: a path the
// user mounted is left to the user.
func Prepare(r Rootfs, mounts []specs.Mount) (Prepared, error) {
	var p Prepared
	if !covered(mounts, "/etc/machine-id") {
		f, err := writeMachineID(r)
		if err != nil {
			return p, err
		}
		p.MachineIDFile = f
	}
	dir, err := journalDir(r, mounts)
	if err != nil {
		return p, err
	}
	p.JournalDir = dir
	// A user's mount below /run/host is the user's /run/host too: its
	// mount point could not be made in the read-only bind.
	if !covered(mounts, RunHost) && !below(mounts, RunHost) {
		if p.RunHostDir, p.HostEnv, err = prepareRunHost(r); err != nil {
			return p, err
		}
	}
	return p, nil
}

// writeMachineID makes /etc/machine-id the container's machine ID, written
// into the writable layer (systemd's machine-id-commit then has nothing to
// do, and the boot is not degraded), or, on a read-only root, into a file
// of the state directory that Apply binds there. An image's own non-empty
// machine-id would win over container_uuid in systemd, so it is replaced.
func writeMachineID(r Rootfs) (bindFile string, err error) {
	content := []byte(r.MachineID + "\n")
	if r.ReadOnly {
		f := filepath.Join(r.StateDir, "machine-id")
		if err := os.WriteFile(f, content, 0o444); err != nil {
			return "", fmt.Errorf("write machine-id: %w", err)
		}
		return f, nil
	}
	p, err := securejoin.SecureJoin(r.Path, "/etc/machine-id")
	if err != nil {
		return "", fmt.Errorf("machine-id path: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("write machine-id: %w", err)
	}
	// A read-only file of the image is replaced, not written through.
	_ = os.Remove(p)
	if err := os.WriteFile(p, content, 0o444); err != nil {
		return "", fmt.Errorf("write machine-id: %w", err)
	}
	return "", nil
}

// journalDir makes <journal root>/<machine id> on the host, so that
// `journalctl -D` (and `journalctl -m`) on the host reads the container's
// journal. Only when the host keeps a persistent journal and the user did
// not mount over the path (/var, /var/log or /var/log/journal).
func journalDir(r Rootfs, mounts []specs.Mount) (string, error) {
	root := r.JournalRoot
	if root == "" {
		root = DefaultJournalRoot
	}
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() || covered(mounts, DefaultJournalRoot) {
		return "", nil
	}
	dir := filepath.Join(root, r.MachineID)
	if err := os.MkdirAll(dir, 0o2755); err != nil {
		return "", fmt.Errorf("create journal dir: %w", err)
	}
	// The group (systemd-journal) follows the parent's, as journald's own
	// directories do.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		_ = os.Chown(dir, 0, int(st.Gid))
	}
	return dir, nil
}

// RemoveJournal deletes a container's journal directory, made by Prepare
// under root (empty: DefaultJournalRoot); called only when the container
// is removed. Anything else is refused.
func RemoveJournal(root, dir string) error {
	if root == "" {
		root = DefaultJournalRoot
	}
	if dir == "" || filepath.Dir(dir) != filepath.Clean(root) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove journal %s: %w", dir, err)
	}
	return nil
}
