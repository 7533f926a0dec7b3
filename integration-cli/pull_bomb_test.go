//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// vmHWM is a process's peak resident memory in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestPullGzipBombStopsAtReserve: a registry serving a ~1 MB layer that
// unpacks to 1 GiB of zeros: the pull stops at --min-free-space with
// the reserve's error, leaves no image and no layer, and the daemon's
// memory stays far below the layer's size (it streams).
func TestPullGzipBombStopsAtReserve(t *testing.T) {
	reg := startRegistry(t, false)
	bomb := filepath.Join(t.TempDir(), "bomb.tar.gz")
	writeBomb(t, bomb, 1<<30, false)
	layer, err := tarball.LayerFromFile(bomb)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.Addr+"/bomb:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push the bomb: %v", err)
	}

	d := tmpfsDaemon(t, "256m", "--min-free-space", "64MB")
	r := d.Stock("pull", reg.Addr+"/bomb:v1")
	if r.Code == 0 || !strings.Contains(r.Stderr, "not enough free space") || !strings.Contains(r.Stderr, "--min-free-space=64MB") {
		t.Fatalf("pull of a gzip bomb: %s", r)
	}
	if out := d.MustCLI(t, "images", "-a", "-q"); out != "" {
		t.Errorf("images after the refused pull: %s", out)
	}
	if n := layerDirs(t, d); n != 0 {
		t.Errorf("%d layer directories left after the refused pull", n)
	}
	checkImageStore(t, d)
	if hwm := vmHWM(t, d.Pid()); hwm > 400<<20 {
		t.Errorf("dockerd's peak memory %d MiB: the layer was not streamed", hwm>>20)
	}
}
