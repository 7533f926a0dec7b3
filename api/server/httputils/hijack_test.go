package httputils

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hijackServer serves one hijacking handler on a unix socket or on TCP
// loopback. Each hijacked stream is sent on the returned channel.
func hijackServer(t *testing.T, network string) (string, <-chan *Stream) {
	t.Helper()
	streams := make(chan *Stream, 4)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := Hijack(w, r, true, nil)
		if err != nil {
			t.Error(err)
			return
		}
		streams <- s
	}))
	if network == "unix" {
		l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
		if err != nil {
			t.Fatal(err)
		}
		ts.Listener.Close()
		ts.Listener = l
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String(), streams
}

// attach connects as Docker's CLI does and reads the upgrade answer.
func attach(t *testing.T, network, addr string, streams <-chan *Stream) (net.Conn, *bufio.Reader, *Stream) {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprint(c, "POST /attach HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	select {
	case s := <-streams:
		t.Cleanup(func() { s.Close() })
		return c, br, s
	case <-time.After(5 * time.Second):
		t.Fatal("not hijacked")
	}
	return nil, nil, nil
}

func gone(s *Stream, within time.Duration) bool {
	select {
	case <-s.Gone():
		return true
	case <-time.After(within):
		return false
	}
}

// A client that half-closes (its stdin ended) is still there: its output
// keeps flowing. One that closes, or is killed, is gone at once, although
// nothing is being written to it and nothing reads from it.
func TestHijackedStreamNoticesHangup(t *testing.T) {
	addr, streams := hijackServer(t, "unix")
	c, br, s := attach(t, "unix", addr, streams)
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Stdin.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("stdin after the half-close: %d %v", n, err)
	}
	if gone(s, 300*time.Millisecond) {
		t.Fatal("a half-closed client was taken as gone")
	}
	if _, err := s.Stdout.Write([]byte("still here\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); line != "still here\n" {
		t.Fatalf("output after the half-close: %q %v", line, err)
	}
	c.Close()
	if !gone(s, 5*time.Second) {
		t.Fatal("a closed client is not gone after 5s")
	}
	// Gone closes the daemon's end too.
	if _, err := s.Stdout.Write([]byte("x")); err == nil {
		t.Error("write after gone succeeded")
	}
}

// On TCP a close is a FIN, which looks like a half-close: the next write
// draws a reset, and that tells.
func TestHijackedStreamNoticesTCPClientGoneOnWrite(t *testing.T) {
	addr, streams := hijackServer(t, "tcp")
	c, _, s := attach(t, "tcp", addr, streams)
	c.Close()
	if gone(s, 200*time.Millisecond) {
		t.Fatal("gone before anything told")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !gone(s, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("writes to a closed TCP client did not tell it is gone")
		}
		_, _ = s.Stdout.Write([]byte("output\n"))
	}
}

// A killed TCP client with unread data resets the connection: gone without
// a write.
func TestHijackedStreamNoticesTCPReset(t *testing.T) {
	addr, streams := hijackServer(t, "tcp")
	c, _, s := attach(t, "tcp", addr, streams)
	_ = c.(*net.TCPConn).SetLinger(0)
	c.Close()
	if !gone(s, 5*time.Second) {
		t.Fatal("a reset connection is not gone after 5s")
	}
}

func TestHijackOnGoneRunsOnceAndClosed(t *testing.T) {
	calls := make(chan struct{}, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := Hijack(w, r, false, func() { calls <- struct{}{} })
		if err != nil {
			t.Error(err)
			return
		}
		// Our own close is not the client going away.
		s.Close()
		s.Close()
		if _, err := s.Stdout.Write([]byte("x")); err == nil {
			t.Error("write after close succeeded")
		}
	}))
	defer ts.Close()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "POST /attach HTTP/1.1\r\nHost: x\r\n\r\n")
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.multiplexed-stream") {
		t.Errorf("answer %q", b)
	}
	select {
	case <-calls:
		t.Error("onGone ran for the daemon's own close")
	case <-time.After(200 * time.Millisecond):
	}
}
