//go:build integration

package integrationcli

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tmpfsDaemon starts a daemon whose data root is a tmpfs of size; at the
// end it stops the daemon, unmounts the tmpfs and cleans up.
func tmpfsDaemon(t *testing.T, size string, args ...string) *Daemon {
	t.Helper()
	d := NewDaemon(t, append([]string{"--storage-driver", "overlay2"}, args...)...)
	if err := os.MkdirAll(d.Root, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", d.Root, "tmpfs", 0, "size="+size+",mode=0711"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if d.cmd != nil {
			d.Stop(t)
		}
		if err := syscall.Unmount(d.Root, 0); err != nil {
			t.Errorf("unmount %s: %v", d.Root, err)
			syscall.Unmount(d.Root, syscall.MNT_DETACH)
		}
		d.Cleanup(t)
	})
	d.Start(t)
	return d
}

func availBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fillUp writes path until its filesystem has not a byte left.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for _, n := range []int{1 << 20, 4096, 1} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	if n := availBytes(t, filepath.Dir(path)); n != 0 {
		t.Fatalf("%d bytes still free", n)
	}
}

// rmi frees space on a full data root, before and after a restart there,
// and an untag (which frees nothing) works too.
func TestRmiOnFullDataRoot(t *testing.T) {
	d := tmpfsDaemon(t, "64m")
	loadBusybox(t, d)
	const size = 12 << 20
	for i, tag := range []string{"it-full:one", "it-full:two"} {
		body := make([]byte, size)
		rand.New(rand.NewSource(int64(i))).Read(body)
		f := filepath.Join(t.TempDir(), "big.tar")
		os.WriteFile(f, tarOf(t, [2]string{"big", string(body)}), 0o644)
		d.MustCLI(t, "import", f, tag)
	}
	d.MustCLI(t, "tag", "busybox", "it-full:alias")

	fillUp(t, filepath.Join(d.Root, "filler"))
	d.MustCLI(t, "rmi", "it-full:alias")
	d.MustCLI(t, "rmi", "it-full:one")
	if n := availBytes(t, d.Root); n < size {
		t.Errorf("rmi of a 12 MiB image on a full disk freed %d bytes", n)
	}

	// Full again, and the daemon killed and restarted on the full disk.
	d.MustCLI(t, "tag", "busybox", "it-full:alias2")
	fillUp(t, filepath.Join(d.Root, "filler2"))
	killHard(t, d)
	d.Start(t)
	d.MustCLI(t, "rmi", "it-full:alias2")
	d.MustCLI(t, "rmi", "it-full:two")
	if n := availBytes(t, d.Root); n < size {
		t.Errorf("rmi after a restart on a full disk freed %d bytes", n)
	}
	checkImageStore(t, d)
	if out := d.MustCLI(t, "images", "--format", "{{.Repository}}:{{.Tag}}"); out != "busybox:latest" {
		t.Errorf("images left: %q", out)
	}
	os.Remove(filepath.Join(d.Root, "filler"))
	d.MustCLI(t, "run", "--rm", "busybox", "true")
}

// writeBomb writes a gzipped tar of one file of n zero bytes; wrapped,
// the tar is a `docker save` archive whose layer is that file.
func writeBomb(t *testing.T, path string, n int64, wrapped bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	name := "zeros"
	if wrapped {
		name = "l/layer.tar"
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: n, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeroReader{}, n); err != nil {
		t.Fatal(err)
	}
	if wrapped {
		m := `[{"Config":"c.json","RepoTags":["it-bomb:load"],"Layers":["l/layer.tar"]}]`
		tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o644, Size: int64(len(m)), Typeflag: tar.TypeReg})
		tw.Write([]byte(m))
	}
	tw.Close()
	zw.Close()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

var stoppedAfter = regexp.MustCompile(`stopped after writing ([0-9.]+[KMG]iB)`)

// A gzip bomb fed to import or load stops at --min-free-space with an
// error that says so, leaves nothing behind, and the engine goes on.
func TestGzipBombStopsAtReserve(t *testing.T) {
	d := tmpfsDaemon(t, "256m", "--min-free-space", "64MB")
	loadBusybox(t, d)
	const zeros = 1 << 30
	for _, op := range []string{"import", "load"} {
		bomb := filepath.Join(t.TempDir(), "bomb.tar.gz")
		writeBomb(t, bomb, zeros, op == "load")
		fi, _ := os.Stat(bomb)
		free := availBytes(t, d.Root)
		start := time.Now()
		var r Result
		if op == "import" {
			r = d.CLI("import", bomb, "it-bomb:import")
		} else {
			r = d.CLI("load", "-i", bomb)
		}
		took := time.Since(start)
		if r.Code == 0 || !strings.Contains(r.Stderr, "not enough free space") || !strings.Contains(r.Stderr, "--min-free-space=64MB") {
			t.Fatalf("%s of a gzip bomb: %s", op, r)
		}
		m := stoppedAfter.FindStringSubmatch(r.Stderr)
		if m == nil {
			t.Fatalf("%s: the error does not say how much was written: %s", op, r.Stderr)
		}
		t.Logf("%s of a %d-byte gzip bomb (1 GiB of zeros) into %d MiB free: stopped after writing %s in %s:\n%s",
			op, fi.Size(), free>>20, m[1], took.Round(time.Millisecond), strings.TrimSpace(r.Stderr))
		if imageID(d, "it-bomb:"+op) != "" {
			t.Fatalf("%s: the bomb became an image", op)
		}
		if n := layerDirs(t, d); n != 1 {
			t.Fatalf("%s: %d layer directories left, want busybox's", op, n)
		}
		checkImageStore(t, d)
		if after := availBytes(t, d.Root); after < free-(1<<20) {
			t.Errorf("%s: %d bytes free before, %d after: the bomb left data behind", op, free, after)
		}
	}
	if !strings.Contains(d.Log(), "stopping a write at the reserve of free space") {
		t.Error("the stop was not logged")
	}
	// A small import goes through.
	f := filepath.Join(t.TempDir(), "small.tar")
	os.WriteFile(f, tarOf(t, [2]string{"small", "s"}), 0o644)
	d.MustCLI(t, "import", f, "it-small")
	d.MustCLI(t, "rmi", "it-small")
}
