package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

// ContainerStartWithFiles starts a container whose first process gets
// files as its fds 3, 4, ... (api/fdpass: socket activation and
// --preserve-fds). The files serve this one start: they are closed when
// it returns, by then the container's process holds its own copies, and a
// later start (a restart policy's, say) runs without them.
func (d *Daemon) ContainerStartWithFiles(ctx context.Context, name string, files *fdpass.Files) error {
	defer files.Close()
	if err := checkPassable(files.Fds); err != nil {
		return err
	}
	return d.containerStart(ctx, name, files)
}

// checkPassable refuses descriptors that would reach the host's files or
// devices from inside the container: a directory (or an O_PATH handle) is
// a way out of the container's root by openat, a device node is the
// device. Sockets, pipes and FIFOs, which is what socket activation
// passes, and regular files (one file, opened as the client opened it)
// are allowed.
func checkPassable(fds []*os.File) error {
	for i, f := range fds {
		fd := int(f.Fd())
		n := 3 + i
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return fmt.Errorf("descriptor %d: %w", n, err)
		}
		if fl&unix.O_PATH != 0 {
			return errdefs.InvalidParameter(fmt.Errorf("descriptor %d is an O_PATH handle, which cannot be passed into a container", n))
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("descriptor %d: %w", n, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFSOCK, unix.S_IFIFO, unix.S_IFREG:
		default:
			return errdefs.InvalidParameter(fmt.Errorf("descriptor %d is %s, which cannot be passed into a container: only sockets, pipes, FIFOs and regular files can", n, fileKind(st.Mode)))
		}
	}
	return nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	// eventfd, signalfd, pidfd, epoll ...: anonymous inodes.
	return "an anonymous kernel object"
}

// listenEnv is the environment of socket activation.
var listenEnv = []string{"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"}

// applyPassedFiles sets the spec up for the descriptors of a start: with
// socket-activation descriptors, LISTEN_FDS, LISTEN_FDNAMES and
// LISTEN_PID, which is the process's pid as it sees it. That is 1, which
// only holds for a process that is PID 1 of a pid namespace of its own:
// not behind --init's reaper, not in the host's or another container's
// pid namespace, where its pid is only known once it runs. Those are
// refused rather than given a LISTEN_PID that sd_listen_fds would ignore.
func applyPassedFiles(c *container.Container, spec *specs.Spec, files *fdpass.Files) error {
	if files == nil || files.Listen == 0 {
		return nil
	}
	if !ownPidNamespace(spec) {
		return errdefs.InvalidParameter(errors.New("socket activation (LISTEN_FDS) needs the container's own PID namespace: its process must be PID 1 there for LISTEN_PID to name it"))
	}
	if c.HostConfig.Init != nil && *c.HostConfig.Init && c.InitSystem == "" {
		return errdefs.InvalidParameter(errors.New("socket activation (LISTEN_FDS) cannot be combined with --init: the command would not be PID 1 and LISTEN_PID would not name it"))
	}
	env := slices.DeleteFunc(spec.Process.Env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(listenEnv, k)
	})
	env = append(env, "LISTEN_FDS="+strconv.Itoa(files.Listen), "LISTEN_PID=1")
	if len(files.Names) > 0 {
		env = append(env, "LISTEN_FDNAMES="+strings.Join(files.Names, ":"))
	}
	spec.Process.Env = env
	return nil
}

func ownPidNamespace(spec *specs.Spec) bool {
	if spec.Linux == nil {
		return false
	}
	return slices.ContainsFunc(spec.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
		return n.Type == specs.PIDNamespace && n.Path == ""
	})
}

// passedFds is the exec driver's view of a start's descriptors.
func passedFds(files *fdpass.Files) []*os.File {
	if files == nil {
		return nil
	}
	return files.Fds
}
