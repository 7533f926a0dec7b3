// Package sdnotify is the engine's end of sd_notify(3) for containers
// (docs/systemd.md, "Readiness"): a datagram socket per container that the
// container's processes find through $NOTIFY_SOCKET, and the readiness and
// watchdog state that its messages (pkg/notifymsg) drive. It knows nothing
// of containers: the daemon says who may send (Verify) and what a message
// changes (the Handler).
package sdnotify

import (
	"errors"
	"fmt"
	"github.com/sdengine/engine/pkg/notifymsg"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// SocketName is the socket's name in its directory; the container sees
// the directory at /run/host, so its $NOTIFY_SOCKET is /run/host/notify.
const SocketName = "notify"

// ContainerPath is $NOTIFY_SOCKET in the container.
const ContainerPath = "/run/host/" + SocketName

// Rate limits: a sender gets Burst messages at once and Rate a second
// after that; the rest is dropped (and counted), so that a flood costs
// the daemon a read and nothing else.
const (
	Burst = 64
	Rate  = 20
)

// Verify tells whether the process pid (in the daemon's PID namespace)
// may notify: it must be in the container.
type Verify func(pid int) bool

// Handler receives each accepted message with its sender's pid.
type Handler func(m notifymsg.Message, pid int)

// Listener is one container's notify socket.
type Listener struct {
	conn    *net.UnixConn
	verify  Verify
	handle  Handler
	done    chan struct{}
	closeMu sync.Once

	// the token bucket
	tokens float64
	last   time.Time
	// dropped counts what the limit or the checks dropped since the last
	// log line, which comes at most every 10 s.
	dropped   int
	lastLog   time.Time
	logPrefix string
}

// Listen makes the socket SocketName in dir, replacing one a previous
// daemon left (the container keeps the directory bound read-only and
// sees the new socket at once), and serves it until Close. The socket is
// bound through /proc/self/fd, so that the directory's path may be longer
// than a socket address (108 bytes) allows.
func Listen(dir string, verify Verify, handle Handler) (*Listener, error) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	defer unix.Close(dfd)
	if err := unix.Unlinkat(dfd, SocketName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("notify socket: remove the old one: %w", err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	addr := fmt.Sprintf("/proc/self/fd/%d/%s", dfd, SocketName)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: addr}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("notify socket: bind in %s: %w", dir, err)
	}
	// Any user in the container may notify, as any process of a service
	// may under systemd (NotifyAccess=all); Verify is the check. Only a
	// socket is chmodded: fchmodat follows a symlink, which only a
	// container that can remount its /run/host (--privileged) could put
	// there meanwhile.
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, SocketName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return nil, fmt.Errorf("notify socket: %s/%s is not the socket just bound (%v)", dir, SocketName, err)
	}
	if err := unix.Fchmodat(dfd, SocketName, 0o666, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	// The kernel attaches the sender's credentials to each message.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("notify socket: SO_PASSCRED: %w", err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, SocketName))
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	l := &Listener{
		conn: c.(*net.UnixConn), verify: verify, handle: handle, done: make(chan struct{}),
		tokens: Burst, last: time.Now(), logPrefix: dir,
	}
	go l.serve()
	return l, nil
}

// Close stops serving and waits for the message in hand to be handled.
// The socket file stays: a container sending meanwhile gets ECONNREFUSED,
// which systemd ignores, until a next daemon listens again.
func (l *Listener) Close() {
	l.closeMu.Do(func() { l.conn.Close() })
	<-l.done
}

func (l *Listener) serve() {
	defer close(l.done)
	buf := make([]byte, notifymsg.MaxMessage+1)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred)+unix.CmsgSpace(4*16))
	for {
		n, oobn, flags, _, err := l.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				slog.Warn("notify socket: read", "dir", l.logPrefix, "err", err)
			}
			return
		}
		pid, ok := credentials(oob[:oobn])
		switch {
		case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || n > notifymsg.MaxMessage:
			l.drop("oversized message")
		case !ok || pid <= 0:
			l.drop("message without credentials")
		case !l.allow(time.Now()):
			l.drop("rate limit")
		case !l.verify(pid):
			l.drop("sender not in the container")
		default:
			m, err := notifymsg.Parse(buf[:n])
			if errors.Is(err, notifymsg.ErrNothingKnown) {
				continue
			}
			if err != nil {
				l.drop(err.Error())
				continue
			}
			if m.MainPID != 0 && m.MainPID != ownPID(pid) {
				// MAINPID= is in the sender's PID namespace: a sender may
				// name itself, and a MAINPID= of another process is
				// ignored; the rest of the message stands.
				l.drop("MAINPID of another process")
				m.MainPID = 0
			}
			l.handle(m, pid)
		}
	}
}

// credentials reads SCM_CREDENTIALS from a message's control data and
// closes any descriptors sent along (SCM_RIGHTS): the engine takes none.
func credentials(oob []byte) (pid int, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, cm := range msgs {
		if fds, err := unix.ParseUnixRights(&cm); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		if cred, err := unix.ParseUnixCredentials(&cm); err == nil {
			pid, ok = int(cred.Pid), true
		}
	}
	return pid, ok
}

// ownPID is pid's number in its own PID namespace (the last of NSpid),
// or 0 when it cannot be read.
func ownPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// allow takes a token from the bucket.
func (l *Listener) allow(now time.Time) bool {
	l.tokens = min(Burst, l.tokens+now.Sub(l.last).Seconds()*Rate)
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// drop counts a dropped message and logs the count at most every 10 s.
func (l *Listener) drop(why string) {
	l.dropped++
	if time.Since(l.lastLog) < 10*time.Second {
		return
	}
	slog.Warn("notify socket: messages dropped", "dir", l.logPrefix, "count", l.dropped, "last", why)
	l.dropped = 0
	l.lastLog = time.Now()
}
