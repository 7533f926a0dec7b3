package httputils

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// A read that fails (here: the deadline the HTTP server sets to end its
// background read) reports 0 bytes, never recvmsg's -1: readers slice
// their buffers with n, and -1 made the daemon panic.
func TestFDConnFailedReadIsZeroBytes(t *testing.T) {
	a, b, err := unixPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	c := &FDConn{UnixConn: a}
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		n, err := c.Read(make([]byte, 16))
		got <- result{n, err}
	}()
	// The read blocks in the poller first, as the server's does.
	time.Sleep(100 * time.Millisecond)
	if err := c.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.n != 0 || !errors.Is(r.err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read ended by the deadline: n=%d err=%v; want 0 and a deadline error", r.n, r.err)
	}
}

func unixPair() (*net.UnixConn, *net.UnixConn, error) {
	dir, err := os.MkdirTemp("", "fdconn")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: dir + "/s", Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	a, err := net.DialUnix("unix", nil, l.Addr().(*net.UnixAddr))
	if err != nil {
		return nil, nil, err
	}
	b, err := l.AcceptUnix()
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}
