package shim

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// outputBufSize is the read buffer of an output stream (exec's own; the
// container's streams read into pooled buffers, readEach).
const outputBufSize = 32 << 10

// initLogLevel is the level libcontainer's init logs at, as the number
// it takes: warnings and errors. Left unset, its C part (nsenter) logs at
// debug: some 30 lines written, read back and parsed by this process for
// every start and exec, and then dropped (our logrus level is info).
var initLogLevel = strconv.Itoa(int(logrus.WarnLevel))

// readBufs are the buffers output is read into. A container's stream
// holds one only while a read is under way, not while it waits for
// output: a group's idle containers hold none (docs/shim.md,
// "Shim groups: where a shim's memory goes").
var readBufs = sync.Pool{New: func() any { b := make([]byte, outputBufSize); return &b }}

// readEach reads f until EOF or an error (EIO from a pty whose other side
// is gone, f closed) and hands each chunk to fn, which must not keep it.
// It waits for f to be readable without a buffer (the runtime's poller),
// then reads into a pooled one.
func readEach(f *os.File, fn func(p []byte)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	if f.SetReadDeadline(time.Time{}) != nil {
		// Not pollable (a blocking descriptor): a plain read loop,
		// which holds its buffer and a thread while it waits.
		buf := make([]byte, outputBufSize)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				fn(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	for {
		var bp *[]byte
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			// A buffer only once there is something to read (or EOF).
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(pfd, 0); err == nil && n == 0 {
				return false
			}
			if bp == nil {
				bp = readBufs.Get().(*[]byte)
			}
			for {
				n, rerr = unix.Read(int(fd), *bp)
				if rerr != unix.EINTR {
					break
				}
			}
			return rerr != unix.EAGAIN
		})
		if n > 0 {
			fn((*bp)[:n])
		}
		if bp != nil {
			readBufs.Put(bp)
		}
		if err != nil || rerr != nil || n <= 0 {
			return
		}
	}
}

// gcPercent is the shim's GOGC: its heap is mostly the containers'
// long-lived state, and what a create allocates is garbage at once.
const gcPercent = 50

// tuneRuntime sets the Go runtime of a shim for its long, mostly idle
// life (figures in docs/shim.md): one P (the work is copying
// bytes between descriptors; a P more is a cache of spans more), a lower
// GOGC, and no heap profiling (its bucket table alone is 1.4 MiB of
// address space). Settings given in the environment win.
func tuneRuntime() {
	runtime.MemProfileRate = 0
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

var releaseScheduled atomic.Bool

// releaseMemory returns to the kernel, shortly after, the memory a create
// used and no longer needs (decoding the spec, libcontainer's start):
// without it the heap stays at its high-water mark. Creates in a burst
// share one release.
func releaseMemory() {
	if releaseScheduled.Swap(true) {
		return
	}
	time.AfterFunc(time.Second, func() {
		releaseScheduled.Store(false)
		debug.FreeOSMemory()
	})
}

// awaitExit blocks until the process pid has exited, without holding an
// OS thread as a blocking wait does (one thread per container of the
// group): its pidfd is polled by the runtime's poller. The caller then
// waits for it, which returns at once. If a pidfd cannot be had, it
// returns at once and the wait blocks as before.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err != nil || n > 0
	})
}

// setBundleLabel makes the config's bundle label dir: specconv takes it
// from the working directory, which is the process's, not the container's.
func setBundleLabel(config *configs.Config, dir string) {
	for i, l := range config.Labels {
		if strings.HasPrefix(l, "bundle=") {
			config.Labels[i] = "bundle=" + dir
			return
		}
	}
	config.Labels = append(config.Labels, "bundle="+dir)
}

// seccompProfiles are the seccomp configs of the group's containers,
// shared: nearly every container has Docker's default profile, some 30
// KiB once converted, and libcontainer only reads it (to load it into
// each process it starts). Bounded: past it a profile is not shared.
var seccompProfiles struct {
	sync.Mutex
	m map[[sha256.Size]byte]*configs.Seccomp
}

const maxSharedProfiles = 16

// sharedSeccomp returns a profile equal to sc that the group already
// holds, or sc (kept for the next containers).
func sharedSeccomp(sc *configs.Seccomp) *configs.Seccomp {
	if sc == nil {
		return nil
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return sc
	}
	key := sha256.Sum256(b)
	seccompProfiles.Lock()
	defer seccompProfiles.Unlock()
	if c, ok := seccompProfiles.m[key]; ok {
		return c
	}
	if seccompProfiles.m == nil {
		seccompProfiles.m = map[[sha256.Size]byte]*configs.Seccomp{}
	}
	if len(seccompProfiles.m) < maxSharedProfiles {
		seccompProfiles.m[key] = sc
	}
	return sc
}

// pollable returns f as a file the runtime's poller waits on (readEach):
// a descriptor received over a socket comes blocking, and a read on it
// would hold a thread. f is closed; on error it is returned as it is.
func pollable(f *os.File) *os.File {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	nfd := -1
	_ = rc.Control(func(fd uintptr) {
		nfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err != nil || nfd < 0 {
		return f
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return f
	}
	nf := os.NewFile(uintptr(nfd), f.Name())
	f.Close()
	return nf
}
