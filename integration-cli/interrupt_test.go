//go:build integration

package integrationcli

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPushCrashReusesLayers: dockerd killed in the middle of a push (one
// layer uploaded, the manifest not) restarts with a consistent store; the
// next push succeeds, finds what was uploaded ("Layer already exists"),
// and the image pulled back is the same.
func TestPushCrashReusesLayers(t *testing.T) {
	reg := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/crash/pushed:v1"
	wantID := buildTwoRandomLayers(t, d, repo)
	d.Stop(t)

	crashDuring(t, d, "push-after-layer", 60*time.Second, "push", repo)
	d.Start(t)
	defer d.Cleanup(t)
	checkImageStore(t, d)
	r := d.CLI("push", repo)
	if r.Code != 0 || !pushDigest.MatchString(r.Stdout) || !strings.Contains(r.Stdout, "Layer already exists") {
		t.Fatalf("push after the crash (want what was uploaded found there):\n%s", r)
	}
	d.MustCLI(t, "rmi", repo)
	if r := d.Stock("pull", repo); r.Code != 0 {
		t.Fatalf("pull back: %s", r)
	}
	if id, _ := inspectImage(t, d, repo); id != wantID {
		t.Fatalf("pulled %s, want %s", id, wantID)
	}
}

// TestBuildClientGoneReusesSteps: a build whose client goes away in the
// middle of a RUN stops (its intermediate container is removed), and the
// next build reuses the steps that were complete.
func TestBuildClientGoneReusesSteps(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	ctx := buildCtx(t, map[string]string{"Dockerfile": "FROM busybox\nRUN echo step2 > /two\nRUN echo started; sleep 300\n"})
	cmd := exec.Command(ourCLI, "build", "-t", "it-gone:v1", ctx)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	started := false
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "started" {
			started = true
			break
		}
	}
	if !started {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the build never reached its long RUN")
	}
	cmd.Process.Kill()
	cmd.Wait()

	// The daemon notices and removes the step's container.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if out := d.MustCLI(t, "ps", "-aq"); out == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers left by the abandoned build: %s", d.MustCLI(t, "ps", "-a"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if imageID(d, "it-gone:v1") != "" {
		t.Fatal("the abandoned build tagged an image")
	}
	checkImageStore(t, d)

	os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte("FROM busybox\nRUN echo step2 > /two\nRUN echo quick\n"), 0o644)
	r := d.CLI("build", "-t", "it-gone:v1", ctx)
	if r.Code != 0 || strings.Count(r.Stdout, "Using cache") != 1 {
		t.Fatalf("build after the client went away (want step 2 from the cache):\n%s", r)
	}
	if out := d.MustCLI(t, "run", "--rm", "it-gone:v1", "cat", "/two"); out != "step2" {
		t.Fatalf("run: %q", out)
	}
}

// TestPullClientGoneReusesLayers: a pull whose client goes away once a
// layer is complete (a big one still coming) leaves no image and a
// consistent store; the next pull finds the complete layers ("Already
// exists") and gives the same image.
func TestPullClientGoneReusesLayers(t *testing.T) {
	reg := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/gone/pulled:v1"
	ctx := buildCtx(t, map[string]string{"Dockerfile": "FROM busybox\nRUN head -c 1000000 /dev/urandom > /one\nRUN head -c 250000000 /dev/urandom > /big\n"})
	if r := d.CLI("build", "-q", "-t", repo, ctx); r.Code != 0 {
		t.Fatalf("build: %s", r)
	}
	wantID, _ := inspectImage(t, d, repo)
	d.MustCLI(t, "push", repo)
	d.MustCLI(t, "rmi", repo, "busybox")

	cmd := exec.Command(ourCLI, "pull", repo)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	complete := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Pull complete") {
			complete = true
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !complete {
		t.Fatal("the pull never completed a layer")
	}
	// The daemon notices, stops the pull and drops its scratch files.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ents, _ := os.ReadDir(filepath.Join(d.Root, "image", "tmp"))
		if len(ents) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned pull is still going: %v", ents)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if id := imageID(d, repo); id != "" {
		t.Fatalf("the pull finished before its client went away (the big layer came too fast): %s", id)
	}
	checkImageStore(t, d)
	r := d.CLI("pull", repo)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Already exists") {
		t.Fatalf("pull after the client went away (want the complete layers reused):\n%s", r)
	}
	if id, _ := inspectImage(t, d, repo); id != wantID {
		t.Fatalf("pulled %s, want %s", id, wantID)
	}
}
