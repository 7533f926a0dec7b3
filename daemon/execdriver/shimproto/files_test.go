package shimproto

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SendFiles waits for the shim's socket, and the descriptors arrive with
// the request, in order.
func TestSendFilesReadFilesRequest(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(filepath.Join(dir, "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	got := make(chan []*os.File, 1)
	go func() {
		// The socket appears a moment after SendFiles began to dial.
		time.Sleep(50 * time.Millisecond)
		l, err := net.Listen("unix", filepath.Join(dir, SocketName))
		if err != nil {
			t.Error(err)
			got <- nil
			return
		}
		defer l.Close()
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
			got <- nil
			return
		}
		defer c.Close()
		req, files, err := ReadFilesRequest(c.(*net.UnixConn))
		if err != nil || req.Op != OpFiles || req.Files != 2 {
			t.Errorf("request %+v, %v", req, err)
		}
		_ = WriteJSONLine(c, Response{})
		got <- files
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := SendFiles(ctx, dir, []*os.File{w, f}); err != nil {
		t.Fatal(err)
	}
	files := <-got
	if len(files) != 2 {
		t.Fatalf("%d descriptors arrived, want 2", len(files))
	}
	defer files[0].Close()
	defer files[1].Close()
	if _, err := files[0].WriteString("through"); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	if n, _ := r.Read(b); string(b[:n]) != "through" {
		t.Errorf("the first descriptor is not the pipe: read %q", b[:n])
	}
	a, _ := f.Stat()
	bst, _ := files[1].Stat()
	if !os.SameFile(a, bst) {
		t.Errorf("the second descriptor is not the file")
	}
}

func TestSendFilesGivesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := SendFiles(ctx, t.TempDir(), []*os.File{os.Stdin}); err == nil {
		t.Fatal("SendFiles to no shim succeeded")
	}
}
