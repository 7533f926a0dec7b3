//go:build integration

package integrationcli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
)

// The image store's fault-injection suite: dockerd is stopped at a named
// point (internal/crashpoint) inside load, import and rmi, killed with
// SIGKILL there, and restarted on the same data root. Then: no layer
// directory is left that no metadata names (nor metadata without its
// directory), the image whose load completed before is intact, the image
// whose load was cut short is absent or complete (as the point says), and
// rmi frees the space.

// crashFixture holds the archives the crash tests load and import.
type crashFixture struct {
	dir          string
	aSave, bSave string // docker save archives: A (busybox + a.txt), B (A + b.txt, b.bin)
	bigTar       string // a rootfs tar for import: b.txt and b.bin
	bigDiffID    string
	aID, bID     string
	binSum       string // sha256 of b.bin
}

const bigFileSize = 10 << 20 // more than one 4 MiB check interval

func newCrashFixture(t *testing.T) *crashFixture {
	t.Helper()
	fx := &crashFixture{dir: t.TempDir()}
	base, err := os.ReadFile(busyboxTar)
	if err != nil {
		t.Fatal(err)
	}
	bin := make([]byte, bigFileSize)
	rand.New(rand.NewSource(9)).Read(bin)
	binSum := sha256.Sum256(bin)
	fx.binSum = hex.EncodeToString(binSum[:])
	layerA := tarOf(t, [2]string{"a.txt", "A\n"})
	layerB := tarOf(t, [2]string{"b.txt", "B\n"}, [2]string{"b.bin", string(bin)})
	fx.bigTar = filepath.Join(fx.dir, "big.tar")
	if err := os.WriteFile(fx.bigTar, layerB, 0o644); err != nil {
		t.Fatal(err)
	}
	fx.bigDiffID = sha256Hex(layerB)

	save := func(name, tag string, layers ...[]byte) (string, string) {
		var diffIDs []string
		var entries [][2]string
		var paths []string
		for i, l := range layers {
			diffIDs = append(diffIDs, sha256Hex(l))
			p := fmt.Sprintf("l%d/layer.tar", i)
			entries = append(entries, [2]string{fmt.Sprintf("l%d/", i), ""}, [2]string{p, string(l)})
			paths = append(paths, p)
		}
		cfg, _ := json.Marshal(map[string]any{
			"architecture": runtime.GOARCH, "os": "linux",
			"config": map[string]any{"Cmd": []string{"cat", "/a.txt"}},
			"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs},
		})
		cfgHex := strings.TrimPrefix(sha256Hex(cfg), "sha256:")
		manifest, _ := json.Marshal([]map[string]any{{"Config": cfgHex + ".json", "RepoTags": []string{tag}, "Layers": paths}})
		entries = append(entries, [2]string{cfgHex + ".json", string(cfg)}, [2]string{"manifest.json", string(manifest)})
		f := filepath.Join(fx.dir, name+".tar")
		if err := os.WriteFile(f, tarOf(t, entries...), 0o644); err != nil {
			t.Fatal(err)
		}
		return f, "sha256:" + cfgHex
	}
	fx.aSave, fx.aID = save("a", "it-crash-a:v1", base, layerA)
	fx.bSave, fx.bID = save("b", "it-crash-b:v1", base, layerA, layerB)
	return fx
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// startArmed starts d with the crash point armed; markers is where the
// daemon says it got there. env execs dockerd, so d's PID stays dockerd's.
func startArmed(t *testing.T, d *Daemon, point, markers string) {
	t.Helper()
	d.Wrapper = []string{"env", "SDENGINE_CRASHPOINT=" + point, "SDENGINE_CRASHPOINT_DIR=" + markers}
	d.Start(t)
	d.Wrapper = nil
}

// killHard kills d with SIGKILL and waits until its PID is gone, so that
// the next start does not find it in the pidfile.
func killHard(t *testing.T, d *Daemon) {
	t.Helper()
	pid := d.Pid()
	d.Kill(t)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("dockerd %d still there after SIGKILL", pid)
}

// checkImageStore fails t unless the data root's layer directories are
// exactly those its metadata names, and nothing half written is left.
func checkImageStore(t *testing.T, d *Daemon) {
	t.Helper()
	img := filepath.Join(d.Root, "image")
	graph := filepath.Join(d.Root, "graph", "overlay2")
	named := map[string]string{}
	var meta struct {
		CacheID string `json:"cache_id"`
	}
	layerdb := filepath.Join(img, "layerdb", "sha256")
	for _, name := range dirNames(t, layerdb) {
		p := filepath.Join(layerdb, name)
		switch {
		case strings.HasPrefix(name, "."):
			t.Errorf("temporary file left in layerdb: %s", name)
		case strings.HasSuffix(name, ".tar.gz"):
			if _, err := os.Stat(strings.TrimSuffix(p, ".tar.gz") + ".json"); err != nil {
				t.Errorf("layer record without metadata: %s", name)
			}
		case strings.HasSuffix(name, ".json"):
			b, err := os.ReadFile(p)
			if err != nil || json.Unmarshal(b, &meta) != nil || meta.CacheID == "" {
				t.Errorf("unreadable layer metadata %s: %v", name, err)
				continue
			}
			named[meta.CacheID] = "layer " + name
		}
	}
	for _, name := range dirNames(t, filepath.Join(img, "mounts")) {
		b, err := os.ReadFile(filepath.Join(img, "mounts", name))
		if err != nil || json.Unmarshal(b, &meta) != nil {
			t.Errorf("unreadable RW layer record %s: %v", name, err)
			continue
		}
		named[meta.CacheID] = "container " + name
	}
	dirs := map[string]bool{}
	for _, name := range dirNames(t, graph) {
		if name == "l" {
			continue
		}
		dirs[name] = true
		if named[name] == "" {
			t.Errorf("orphan layer directory %s (nothing names it)", name)
		}
	}
	for id, what := range named {
		if !dirs[id] {
			t.Errorf("%s names a layer directory %s that is missing", what, id)
		}
	}
	for _, name := range dirNames(t, filepath.Join(graph, "l")) {
		if _, err := os.Stat(filepath.Join(graph, "l", name)); err != nil {
			t.Errorf("dangling short link l/%s", name)
		}
	}
	for _, sub := range []string{"tmp", "intents"} {
		if n := dirNames(t, filepath.Join(img, sub)); len(n) > 0 {
			t.Errorf("image/%s not empty: %v", sub, n)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// layerDirs counts the graph driver's layer directories.
func layerDirs(t *testing.T, d *Daemon) int {
	return len(dirNames(t, filepath.Join(d.Root, "graph", "overlay2"))) - 1 // l/
}

// diskUsage is the space files under dir take.
func diskUsage(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// imageID is the ID ref names, or "" when there is no such image.
func imageID(d *Daemon, ref string) string {
	r := d.CLI("image", "inspect", "--format", "{{.Id}}", ref)
	if r.Code != 0 {
		return ""
	}
	return strings.TrimSpace(r.Stdout)
}

// savedLayerDigest saves ref and returns the digest of its only layer tar:
// the layer's content read back from the store.
func savedLayerDigest(t *testing.T, d *Daemon, ref string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "saved.tar")
	d.MustCLI(t, "save", "-o", out, ref)
	files := testenv.TarFiles(t, out)
	var m []struct{ Layers []string }
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil || len(m) != 1 || len(m[0].Layers) != 1 {
		t.Fatalf("saved manifest %s: %v", files["manifest.json"], err)
	}
	return sha256Hex(files[m[0].Layers[0]])
}

// checkImageA checks that A, loaded before the crash, is whole.
func checkImageA(t *testing.T, d *Daemon, fx *crashFixture) {
	t.Helper()
	if id := imageID(d, "it-crash-a:v1"); id != fx.aID {
		t.Fatalf("image A, loaded before the crash: %q, want %s", id, fx.aID)
	}
	if out := d.MustCLI(t, "run", "--rm", "it-crash-a:v1"); out != "A" {
		t.Fatalf("image A runs and prints %q", out)
	}
}

func TestImageStoreCrashPoints(t *testing.T) {
	fx := newCrashFixture(t)
	for _, tc := range []struct {
		point string
		// complete: the operation cut short must be found complete after
		// the restart (else absent).
		complete bool
	}{
		{"load-after-archive-extract", false},
		{"load-during-layer-extract", false},
		{"load-after-layer-extract", false},
		{"load-before-layer-metadata", false},
		{"load-before-image-config", false},
		{"load-before-tag", true},
		{"import-during-layer-extract", false},
		{"import-after-layer-extract", false},
		{"import-before-layer-metadata", false},
		{"import-before-image-config", false},
		{"import-before-tag", true},
		{"rmi-after-image-config", true},
		{"remove-layer-after-metadata", true},
		{"rmi-before-tag", true},
	} {
		t.Run(tc.point, func(t *testing.T) {
			t.Parallel()
			op, _, _ := strings.Cut(tc.point, "-")
			if tc.point == "remove-layer-after-metadata" {
				op = "rmi"
			}
			d := NewDaemon(t, "--storage-driver", "overlay2")
			d.Start(t)
			defer d.Cleanup(t)
			loadBusybox(t, d)
			d.MustCLI(t, "load", "-i", fx.aSave)
			d.Stop(t)

			markers := t.TempDir()
			startArmed(t, d, tc.point, markers)
			done := make(chan Result, 1)
			go func() {
				switch op {
				case "load":
					done <- d.CLI("load", "-i", fx.bSave)
				case "import":
					done <- d.CLI("import", fx.bigTar, "it-crash-imp:v1")
				case "rmi":
					done <- d.CLI("rmi", "it-crash-a:v1")
				}
			}()
			waitFor(t, func() bool {
				select {
				case r := <-done:
					t.Fatalf("%s finished without reaching %s: %s", op, tc.point, r)
				default:
				}
				_, err := os.Stat(filepath.Join(markers, tc.point))
				return err == nil
			})
			killHard(t, d)
			select {
			case r := <-done:
				if r.Code == 0 {
					t.Fatalf("%s succeeded though the daemon was killed: %s", op, r)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the client did not notice the daemon's death")
			}

			logged := len(d.Log())
			d.Start(t)
			checkImageStore(t, d)
			if !strings.Contains(d.Log()[logged:], "image store: ") {
				t.Errorf("the restart logged nothing of the image store's recovery")
			}
			before := diskUsage(filepath.Join(d.Root, "graph"))
			switch op {
			case "load":
				checkImageA(t, d, fx)
				id := imageID(d, fx.bID)
				if !tc.complete {
					if id != "" || imageID(d, "it-crash-b:v1") != "" {
						t.Fatalf("image B, whose load was cut short at %s, is there", tc.point)
					}
					break
				}
				if got := imageID(d, "it-crash-b:v1"); got != fx.bID {
					t.Fatalf("image B after %s: tag names %q, want %s (complete)", tc.point, got, fx.bID)
				}
				if out := d.MustCLI(t, "run", "--rm", "it-crash-b:v1", "sh", "-c", "cat /b.txt; sha256sum /b.bin"); out != "B\n"+fx.binSum+"  /b.bin" {
					t.Fatalf("image B's content: %q", out)
				}
				d.MustCLI(t, "rmi", "it-crash-b:v1")
			case "import":
				checkImageA(t, d, fx)
				id := imageID(d, "it-crash-imp:v1")
				if !tc.complete {
					if id != "" || layerDirs(t, d) != 2 { // busybox's (A's base) and A's
						t.Fatalf("the import cut short at %s left an image (%q) or a layer (%d dirs)", tc.point, id, layerDirs(t, d))
					}
					break
				}
				if id == "" {
					t.Fatalf("the import cut short at %s is not complete", tc.point)
				}
				if got := savedLayerDigest(t, d, "it-crash-imp:v1"); got != fx.bigDiffID {
					t.Fatalf("imported layer reads back as %s, want %s", got, fx.bigDiffID)
				}
				d.MustCLI(t, "rmi", "it-crash-imp:v1")
			case "rmi":
				// The removal is finished: A is gone, its own layer too.
				if id := imageID(d, fx.aID); id != "" {
					t.Fatalf("image A, whose removal was cut short at %s, is back", tc.point)
				}
				if imageID(d, "it-crash-a:v1") != "" {
					t.Fatal("A's tag is back")
				}
				if n := layerDirs(t, d); n != 1 {
					t.Fatalf("%d layer directories after A's removal, want busybox's", n)
				}
			}
			if op != "rmi" {
				d.MustCLI(t, "rmi", "it-crash-a:v1")
			}
			// What is left is busybox's layer, and removals freed their space.
			if n := layerDirs(t, d); n != 1 {
				t.Errorf("%d layer directories after rmi, want busybox's", n)
			}
			after := diskUsage(filepath.Join(d.Root, "graph"))
			if tc.complete && op != "rmi" && before-after < bigFileSize {
				t.Errorf("rmi freed %d bytes, want at least %d", before-after, bigFileSize)
			}
			checkImageStore(t, d)
			// And the store works: the load runs again.
			d.MustCLI(t, "load", "-i", fx.bSave)
			if out := d.MustCLI(t, "run", "--rm", "it-crash-b:v1", "cat", "/b.txt"); out != "B" {
				t.Fatalf("B loaded after recovery prints %q", out)
			}
		})
	}
}

// A container whose record is gone (an rm or a create cut short) no
// longer holds its image's layers after a restart: rmi frees them.
func TestLeftoverRWLayerIsReleased(t *testing.T) {
	fx := newCrashFixture(t)
	d := NewDaemon(t, "--storage-driver", "overlay2")
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	d.MustCLI(t, "load", "-i", fx.bSave)
	id := remember(d.MustCLI(t, "create", "it-crash-b:v1"))
	killHard(t, d)
	if err := os.RemoveAll(filepath.Join(d.Root, "containers", id)); err != nil {
		t.Fatal(err)
	}
	d.Start(t)
	if !strings.Contains(d.Log(), "removing the writable layer of a container without a record") {
		t.Errorf("the release was not logged")
	}
	checkImageStore(t, d)
	if _, err := os.Stat(filepath.Join(d.Root, "graph", "overlay2", id)); err == nil {
		t.Fatal("the container's layer directory is still there")
	}
	before := diskUsage(filepath.Join(d.Root, "graph"))
	d.MustCLI(t, "rmi", "it-crash-b:v1")
	if freed := before - diskUsage(filepath.Join(d.Root, "graph")); freed < bigFileSize {
		t.Fatalf("rmi freed %d bytes, want at least %d", freed, bigFileSize)
	}
	if n := layerDirs(t, d); n != 1 {
		t.Fatalf("%d layer directories left, want busybox's", n)
	}
}
