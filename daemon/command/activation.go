package command

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/coreos/go-systemd/v22/activation"
)

// firstActivatedFD is the first file descriptor systemd passes (SD_LISTEN_FDS_START).
const firstActivatedFD = 3

// activatedSockets are the sockets systemd passed in (LISTEN_FDS), read
// once for all the `-H fd://...` hosts: reading them takes them (LISTEN_*
// is cleared so that children do not think they were activated, and the
// passed descriptors are closed once they are listeners), so a second read
// would find nothing. Each socket is served once, whichever -H named it.
type activatedSockets struct {
	loaded bool
	ls     []net.Listener // by position: fd 3+i; nil when not a listening socket
	names  []string       // FileDescriptorName=, or LISTEN_FD_<fd> without one
	taken  []bool
}

func (a *activatedSockets) load() {
	if a.loaded {
		return
	}
	a.loaded = true
	for _, f := range activation.Files(true) {
		l, err := net.FileListener(f)
		if err != nil {
			slog.Warn("a file passed by systemd is not a listening socket; ignored", "fd", f.Fd(), "name", f.Name(), "err", err)
			l = nil
		}
		a.names = append(a.names, f.Name())
		a.ls = append(a.ls, l)
		// The listener holds its own descriptor.
		f.Close()
	}
	a.taken = make([]bool, len(a.ls))
}

// take returns the sockets `-H fd://spec` asks for that no earlier -H took:
// every one for `fd://`, the one with that descriptor number for `fd://3`,
// those of that FileDescriptorName for `fd://docker.socket`. Asking again
// for sockets already taken (`-H fd:// -H fd://`) adds nothing and is no
// error; asking for sockets systemd did not pass is one.
func (a *activatedSockets) take(spec string) ([]net.Listener, error) {
	a.load()
	var match func(i int) bool
	switch n, err := strconv.Atoi(spec); {
	case spec == "":
		match = func(i int) bool { return a.ls[i] != nil }
	case err == nil:
		if n < firstActivatedFD || n-firstActivatedFD >= len(a.ls) {
			return nil, fmt.Errorf("fd://%d: systemd passed %d socket(s), as file descriptors 3 to %d", n, len(a.ls), firstActivatedFD+len(a.ls)-1)
		}
		if a.ls[n-firstActivatedFD] == nil {
			return nil, fmt.Errorf("fd://%d: the file systemd passed as file descriptor %d is not a listening socket", n, n)
		}
		match = func(i int) bool { return i == n-firstActivatedFD }
	default:
		match = func(i int) bool { return a.ls[i] != nil && a.names[i] == spec }
	}
	var out []net.Listener
	found := false
	for i := range a.ls {
		if !match(i) {
			continue
		}
		found = true
		if !a.taken[i] {
			a.taken[i] = true
			out = append(out, a.ls[i])
		}
	}
	if !found {
		if spec == "" {
			return nil, fmt.Errorf("no sockets found via socket activation: make sure the service was started by systemd")
		}
		return nil, fmt.Errorf("no socket named %q passed by systemd", spec)
	}
	return out, nil
}

// closeUntaken closes the sockets systemd passed that no -H asked for:
// nothing would ever accept on them.
func (a *activatedSockets) closeUntaken() {
	for i, l := range a.ls {
		if l != nil && !a.taken[i] {
			slog.Info("socket passed by systemd is not served: no -H fd:// names it", "fd", firstActivatedFD+i, "name", a.names[i])
			l.Close()
		}
	}
}
