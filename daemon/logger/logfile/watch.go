package logfile

import (
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// watcher wakes a follower when the log directory changes. It watches the
// directory, not the file, so that rotation (rename + create) is seen too.
// Without inotify it degrades to polling; waits are always bounded so that
// cancellation is noticed promptly.
type watcher struct {
	fd  int
	buf []byte
}

func newWatcher(path string) *watcher {
	w := &watcher{fd: -1}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return w
	}
	mask := uint32(unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_CLOSE_WRITE)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), mask); err != nil {
		unix.Close(fd)
		return w
	}
	w.fd = fd
	w.buf = make([]byte, 4096)
	return w
}

// wait returns after an event or max, whichever is first.
func (w *watcher) wait(max time.Duration) {
	if w.fd < 0 {
		time.Sleep(max / 2)
		return
	}
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, int(max/time.Millisecond)); err != nil || n == 0 {
		return
	}
	// Drain the queued events; which file changed does not matter.
	for {
		if _, err := unix.Read(w.fd, w.buf); err != nil {
			return
		}
	}
}

func (w *watcher) close() {
	if w.fd >= 0 {
		unix.Close(w.fd)
	}
}
