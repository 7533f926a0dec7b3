package shimproto

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shim binds each container's socket by path, also one longer than
// sun_path holds, and removes it itself.
func TestListenLongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Listen(dir, SocketName)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 2)
	if _, err := c.Read(b); err != nil || string(b) != "hi" {
		t.Fatalf("read %q, %v", b, err)
	}
	c.Close()
}

// A container's shim.pid names the shim and its group; one that is not
// a running shim of that group, or was released, is no shim.
func TestLiveShimPid(t *testing.T) {
	dir := t.TempDir()
	if err := WriteShimPid(dir, "/run/x/shims/g1"); err != nil {
		t.Fatal(err)
	}
	if pid := LiveShimPid(dir); pid != 0 {
		t.Fatalf("the test process taken for a shim: %d", pid)
	}
	if err := ReleaseShimPid(dir); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseShimPid(dir); err != nil {
		t.Fatalf("releasing twice: %v", err)
	}
	if pid := LiveShimPid(dir); pid != 0 {
		t.Fatalf("released: %d", pid)
	}
}
