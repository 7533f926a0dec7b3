package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	containerrouter "github.com/sdengine/engine/api/server/router/container"
)

// startRecorder records the starts it is asked for: with descriptors, what
// each one's first bytes read.
type startRecorder struct {
	backend.Containers
	plain chan string
	files chan []string
}

func (s startRecorder) ContainerStart(_ context.Context, name string) error {
	s.plain <- name
	return nil
}

func (s startRecorder) ContainerStartWithFiles(_ context.Context, _ string, f *fdpass.Files) error {
	defer f.Close()
	var got []string
	for _, fl := range f.Fds {
		b := make([]byte, 16)
		n, _ := fl.Read(b)
		got = append(got, string(b[:n]))
	}
	s.files <- got
	return nil
}

func serveRecorder(t *testing.T, network string) (startRecorder, string) {
	t.Helper()
	rec := startRecorder{plain: make(chan string, 1), files: make(chan []string, 1)}
	srv := New(containerrouter.New(rec))
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "api.sock")
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close(context.Background()) })
	return rec, l.Addr().String()
}

// pipeWith returns a pipe's read end holding s.
func pipeWith(t *testing.T, s string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := w.WriteString(s); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return r
}

// startWith sends a start carrying files (none: no SCM_RIGHTS) and the
// headers of r, and returns the status and message.
func startWith(t *testing.T, conn net.Conn, r *fdpass.Request, files ...*os.File) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://docker/v1.51/containers/ctr/start", http.NoBody)
	if r != nil {
		r.Set(req.Header)
	}
	var head bytes.Buffer
	if err := req.Write(&head); err != nil {
		t.Fatal(err)
	}
	if uc, ok := conn.(*net.UnixConn); ok && len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		if _, _, err := uc.WriteMsgUnix(head.Bytes(), unix.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
	} else if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var msg struct{ Message string }
	_ = json.Unmarshal(body, &msg)
	return resp.StatusCode, msg.Message
}

func TestStartWithFilesOverUnix(t *testing.T) {
	rec, addr := serveRecorder(t, "unix")
	conn, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	code, msg := startWith(t, conn, &fdpass.Request{Files: 2, Listen: 1, Names: []string{"web"}}, pipeWith(t, "a"), pipeWith(t, "b"))
	if code != http.StatusNoContent {
		t.Fatalf("start with descriptors: %d %s", code, msg)
	}
	if got := <-rec.files; len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("the backend got %q, want the two pipes in order", got)
	}
	// A stock start on the same connection is Docker's start.
	if code, msg := startWith(t, conn, nil); code != http.StatusNoContent {
		t.Fatalf("plain start: %d %s", code, msg)
	}
	if got := <-rec.plain; got != "ctr" {
		t.Fatalf("plain start of %q", got)
	}
	// The count must be what came.
	code, msg = startWith(t, conn, &fdpass.Request{Files: 2}, pipeWith(t, "c"))
	if code != http.StatusBadRequest || msg != "Sdengine-Pass-Fds says 2 descriptors, 1 came with the request" {
		t.Fatalf("a short count: %d %q", code, msg)
	}
	code, msg = startWith(t, conn, &fdpass.Request{Files: 1, Listen: 1, Names: []string{"a:b"}}, pipeWith(t, "c"))
	if code != http.StatusBadRequest {
		t.Fatalf("bad names: %d %q", code, msg)
	}
}

// Descriptors a client sends without asking for anything are closed, not
// kept by the daemon: the write end of the pipe sees its reader gone.
func TestUnclaimedFilesAreClosed(t *testing.T) {
	rec, addr := serveRecorder(t, "unix")
	conn, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if code, msg := startWith(t, conn, nil, r); code != http.StatusNoContent {
		t.Fatalf("plain start: %d %s", code, msg)
	}
	<-rec.plain
	r.Close()
	conn.Close()
	// Once the daemon's copy is closed too, writing fails with EPIPE.
	for i := 0; ; i++ {
		if _, err := w.Write([]byte("x")); err != nil {
			break
		}
		if i > 1000 {
			t.Fatal("the daemon still holds the read end of the pipe")
		}
		waitBriefly()
	}
}

func TestStartWithFilesOverTCPIsRefused(t *testing.T) {
	_, addr := serveRecorder(t, "tcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	code, msg := startWith(t, conn, &fdpass.Request{Files: 1})
	if code != http.StatusBadRequest || msg != fdpass.ErrNotUnix.Error() {
		t.Fatalf("over TCP: %d %q", code, msg)
	}
}

func waitBriefly() { _, _ = unix.Poll(nil, 5) }

// The peer's shutdown of its side reads as io.EOF, as from any net.Conn
// (the end of an attach's stdin).
func TestFDConnEOF(t *testing.T) {
	a, b, err := unixPair()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := &httputils.FDConn{UnixConn: a}
	defer c.Close()
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = b.CloseWrite()
	buf := make([]byte, 8)
	if n, err := c.Read(buf); n != 1 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer's shutdown: %d %v, want io.EOF", n, err)
	}
}

func unixPair() (*net.UnixConn, *net.UnixConn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	conn := func(fd int) (*net.UnixConn, error) {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			return nil, err
		}
		return c.(*net.UnixConn), nil
	}
	a, err := conn(fds[0])
	if err != nil {
		return nil, nil, err
	}
	b, err := conn(fds[1])
	return a, b, err
}
