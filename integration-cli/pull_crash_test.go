//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPullCrashReusesLayers: dockerd killed in the middle of a pull (the
// first new layer complete, the others not) restarts with a consistent
// store and no image; the next pull succeeds, fetching again only what
// was not complete, and gives the same image.
func TestPullCrashReusesLayers(t *testing.T) {
	reg := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/crash/pulled:v1"
	wantID := buildTwoRandomLayers(t, d, repo)
	d.MustCLI(t, "push", repo)
	d.MustCLI(t, "rmi", repo, "busybox")
	d.Stop(t)

	crashDuring(t, d, "pull-after-layer", 30*time.Second, "pull", repo)
	d.Start(t)
	defer d.Cleanup(t)
	checkImageStore(t, d)
	if r := d.CLI("image", "inspect", repo); r.Code == 0 {
		t.Fatalf("the cut-short pull left an image: %s", r)
	}
	r := d.CLI("pull", repo)
	if r.Code != 0 || strings.Count(r.Stdout, "Already exists") != 1 || strings.Count(r.Stdout, "Pull complete") != 2 {
		t.Fatalf("pull after the crash (want the complete layer reused, two fetched):\n%s", r)
	}
	if id, _ := inspectImage(t, d, repo); id != wantID {
		t.Fatalf("pulled %s, want %s", id, wantID)
	}
	if out := d.MustCLI(t, "run", "--rm", repo, "sh", "-c", "wc -c < /two"); out != "3000000" {
		t.Fatalf("run: %q", out)
	}
	d.MustCLI(t, "rmi", repo)
	checkImageStore(t, d)
	if ents, _ := os.ReadDir(filepath.Join(d.Root, "image", "pulled")); len(ents) != 0 {
		t.Fatalf("pull marks left: %d", len(ents))
	}
}

// buildTwoRandomLayers builds repo from busybox with two layers of 3 MB of
// random bytes each (incompressible, so a pull or push takes a moment)
// and returns its image ID.
func buildTwoRandomLayers(t *testing.T, d *Daemon, repo string) string {
	t.Helper()
	ctx := buildCtx(t, map[string]string{"Dockerfile": "FROM busybox\nRUN head -c 3000000 /dev/urandom > /one\nRUN head -c 3000000 /dev/urandom > /two\n"})
	if r := d.CLI("build", "-q", "-t", repo, ctx); r.Code != 0 {
		t.Fatalf("build: %s", r)
	}
	id, _ := inspectImage(t, d, repo)
	return id
}

// crashDuring starts d armed to stop at the crash point, runs the CLI
// with args, and kills d hard once the point is reached (within timeout).
// d is left stopped.
func crashDuring(t *testing.T, d *Daemon, point string, timeout time.Duration, args ...string) {
	t.Helper()
	markers := t.TempDir()
	startArmed(t, d, point, markers)
	done := make(chan Result, 1)
	go func() { done <- d.CLI(args...) }()
	deadline := time.Now().Add(timeout)
	for !fileExists(filepath.Join(markers, point)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached its crash point %s", args[0], point)
		}
		time.Sleep(20 * time.Millisecond)
	}
	killHard(t, d)
	<-done
}
