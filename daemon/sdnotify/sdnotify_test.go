package sdnotify

import (
	"fmt"
	"github.com/sdengine/engine/pkg/notifymsg"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

type entries struct {
	mu sync.Mutex
	e  []Entry
}

func (r *entries) add(e Entry) { r.mu.Lock(); r.e = append(r.e, e); r.mu.Unlock() }
func (r *entries) last() Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.e) == 0 {
		return Entry{}
	}
	return r.e[len(r.e)-1]
}
func (r *entries) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.e) }

func TestTracker(t *testing.T) {
	var rec entries
	tr := NewTracker(rec.add)
	defer tr.Close()
	if tr.Health() != Starting {
		t.Fatal(tr.Health())
	}
	tr.Apply(notifymsg.Message{Status: "booting", HasStatus: true})
	if e := rec.last(); e.Health != Starting || e.Output != "STATUS=booting" {
		t.Fatalf("%+v", e)
	}
	tr.Apply(notifymsg.Message{Ready: true, Status: "up", HasStatus: true, MainPID: 5})
	if e := rec.last(); e.Health != Healthy || e.Output != "STATUS=up\nREADY=1" {
		t.Fatalf("%+v", e)
	}
	n := rec.count()
	if tr.Apply(notifymsg.Message{Watchdog: true}) || tr.Apply(notifymsg.Message{Ready: true}) || rec.count() != n {
		t.Fatal("a ping or a repeated READY=1 made an entry")
	}
	tr.Apply(notifymsg.Message{Reloading: true})
	if e := rec.last(); e.Health != Healthy || !strings.Contains(e.Output, "RELOADING=1") || !strings.Contains(e.Output, "STATUS=up") {
		t.Fatalf("%+v", e)
	}
	tr.Apply(notifymsg.Message{Ready: true})
	if rec.count() != n+2 {
		t.Fatal("READY=1 after RELOADING=1 made no entry")
	}
	// The watchdog: a lapse is unhealthy, the next ping ends it.
	tr.Apply(notifymsg.Message{WatchdogUsec: 50000})
	time.Sleep(30 * time.Millisecond)
	tr.Apply(notifymsg.Message{Watchdog: true})
	time.Sleep(30 * time.Millisecond)
	if tr.Health() != Healthy {
		t.Fatal("lapsed although pinged")
	}
	deadline := time.Now().Add(2 * time.Second)
	for tr.Health() != Unhealthy && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if e := rec.last(); e.Health != Unhealthy || !e.Failing || !strings.Contains(e.Output, "watchdog timeout") {
		t.Fatalf("%+v", e)
	}
	tr.Apply(notifymsg.Message{Watchdog: true})
	if tr.Health() != Healthy {
		t.Fatal("a ping did not end the lapse")
	}
	// EXTEND_TIMEOUT_USEC pushes the deadline.
	tr.Apply(notifymsg.Message{ExtendTimeoutUsec: 400000})
	time.Sleep(150 * time.Millisecond)
	if tr.Health() != Healthy {
		t.Fatal("lapsed within the extension")
	}
	tr.Apply(notifymsg.Message{WatchdogTrigger: true})
	if e := rec.last(); e.Health != Unhealthy || !e.Failing {
		t.Fatalf("%+v", e)
	}
	tr.Apply(notifymsg.Message{Watchdog: true})
	// STOPPING=1 disarms the watchdog.
	tr.Apply(notifymsg.Message{Stopping: true})
	time.Sleep(500 * time.Millisecond)
	if tr.Health() != Healthy {
		t.Fatal("lapsed while stopping")
	}
	tr.Close()
	if tr.Apply(notifymsg.Message{Status: "after", HasStatus: true}) {
		t.Fatal("recorded after Close")
	}

	// A restarted daemon's tracker takes the recorded health.
	tr = NewTracker(rec.add)
	defer tr.Close()
	tr.Restore(Unhealthy, "up")
	if tr.Health() != Unhealthy {
		t.Fatal(tr.Health())
	}
	tr.Apply(notifymsg.Message{Watchdog: true})
	if e := rec.last(); e.Health != Healthy || !strings.Contains(e.Output, "STATUS=up") {
		t.Fatalf("%+v", e)
	}
}

// send sends b to the socket at path, with descriptors fds.
func send(t *testing.T, path string, b []byte, fds ...int) error {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return unix.Sendmsg(fd, b, oob, &unix.SockaddrUnix{Name: path}, 0)
}

type got struct {
	mu  sync.Mutex
	msg []notifymsg.Message
	pid []int
}

func (g *got) handle(m notifymsg.Message, pid int) {
	g.mu.Lock()
	g.msg = append(g.msg, m)
	g.pid = append(g.pid, pid)
	g.mu.Unlock()
}

func (g *got) wait(t *testing.T, n int) []notifymsg.Message {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		g.mu.Lock()
		if len(g.msg) >= n {
			m := append([]notifymsg.Message(nil), g.msg...)
			g.mu.Unlock()
			return m
		}
		g.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d messages", n)
	return nil
}

func TestListenerChecksAndLimits(t *testing.T) {
	// A directory whose socket path is longer than a socket address takes.
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	short, err := os.MkdirTemp("", "n")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(short)
	link := filepath.Join(short, "l")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	sock := filepath.Join(link, SocketName)

	var g got
	allowed := true
	var mu sync.Mutex
	verify := func(pid int) bool {
		mu.Lock()
		defer mu.Unlock()
		return allowed && pid == os.Getpid()
	}
	l, err := Listen(dir, verify, g.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, err := os.Stat(filepath.Join(dir, SocketName)); err != nil || fi.Mode()&0o777 != 0o666 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket: %v %v", fi.Mode(), err)
	}
	// Garbage, oversized and descriptor-carrying messages change nothing,
	// and a descriptor sent along is not kept.
	r, w, _ := os.Pipe()
	defer w.Close()
	for _, b := range []string{"garbage", strings.Repeat("X", notifymsg.MaxMessage+100), "\x00\x01"} {
		if err := send(t, sock, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := send(t, sock, []byte("STATUS=with fd"), int(r.Fd())); err != nil {
		t.Fatal(err)
	}
	r.Close()
	// A MAINPID= of a process outside the container is dropped.
	if err := send(t, sock, []byte("READY=1\nMAINPID=1")); err != nil {
		t.Fatal(err)
	}
	if err := send(t, sock, []byte(fmt.Sprintf("STATUS=mine\nMAINPID=%d", os.Getpid()))); err != nil {
		t.Fatal(err)
	}
	msgs := g.wait(t, 3)
	if len(msgs) != 3 || msgs[2].MainPID != os.Getpid() || msgs[0].Status != "with fd" || !msgs[1].Ready || msgs[1].MainPID != 0 {
		t.Fatalf("%+v", msgs)
	}
	// The pipe's write end sees no reader: the listener closed its copy.
	w.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("the descriptor sent with a message is still open in the listener")
	}
	// A sender Verify refuses is dropped.
	mu.Lock()
	allowed = false
	mu.Unlock()
	send(t, sock, []byte("READY=1"))
	mu.Lock()
	allowed = true
	mu.Unlock()
	// A flood: at most the burst (and what refills meanwhile) gets through.
	for range 1000 {
		send(t, sock, []byte("WATCHDOG=1"))
	}
	time.Sleep(200 * time.Millisecond)
	g.mu.Lock()
	n := len(g.msg)
	g.mu.Unlock()
	if n < 3+Burst/2 || n > 3+Burst+Rate*5 {
		t.Fatalf("%d messages of a flood of 1000 handled", n-3)
	}
}

// TestListenerReadOnlyBindAndRelisten checks what the daemon relies on: a
// socket is reached through a read-only bind of its directory, and one
// made again (a new daemon) is reached through the same bind.
func TestListenerReadOnlyBindAndRelisten(t *testing.T) {
	dir, ro := t.TempDir(), t.TempDir()
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind (the test needs root): %v", err)
	}
	defer unix.Unmount(ro, unix.MNT_DETACH)
	if err := unix.Mount("", ro, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(ro, SocketName)
	var g got
	verify := func(int) bool { return true }
	l, err := Listen(dir, verify, g.handle)
	if err != nil {
		t.Fatal(err)
	}
	if err := send(t, sock, []byte("STATUS=first")); err != nil {
		t.Fatalf("send through a read-only bind: %v", err)
	}
	g.wait(t, 1)
	l.Close()
	if err := send(t, sock, []byte("STATUS=while down")); err == nil {
		t.Fatal("send with no listener succeeded")
	}
	l, err = Listen(dir, verify, g.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := send(t, sock, []byte("STATUS=second")); err != nil {
		t.Fatal(err)
	}
	if m := g.wait(t, 2); m[1].Status != "second" {
		t.Fatalf("%+v", m)
	}
}
