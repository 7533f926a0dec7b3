//go:build integration

package integrationcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var pushDigest = regexp.MustCompile(`(?m)^(\S+): digest: (sha256:[0-9a-f]{64}) size: (\d+)$`)

func inspectImage(t *testing.T, d *Daemon, ref string) (id string, repoDigests []string) {
	t.Helper()
	out := d.MustCLI(t, "image", "inspect", ref)
	var v []struct {
		ID          string `json:"Id"`
		RepoDigests []string
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v) != 1 {
		t.Fatalf("inspect %s: %v: %s", ref, err, out)
	}
	return v[0].ID, v[0].RepoDigests
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRegistryPushPull pushes busybox to a plain HTTP registry on
// loopback, removes it, and pulls it back by tag and by digest with both
// CLIs: the same manifest digest and the same image ID come back.
func TestRegistryPushPull(t *testing.T) {
	reg := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/busybox"
	origID, _ := inspectImage(t, d, "busybox")
	pushSince := sinceNow()
	d.MustCLI(t, "tag", "busybox", repo+":v1")

	out := mustStock(t, d, "push", repo+":v1")
	m := pushDigest.FindStringSubmatch(out)
	if m == nil || m[1] != "v1" || !strings.Contains(out, "The push refers to repository ["+repo+"]") || !strings.Contains(out, "Pushed") {
		t.Fatalf("push output:\n%s", out)
	}
	dgst := m[2]
	if _, rd := inspectImage(t, d, repo+":v1"); !contains(rd, repo+"@"+dgst) {
		t.Fatalf("RepoDigests after push: %v, want %s@%s", rd, repo, dgst)
	}
	// Again: every blob is there already.
	if out := mustStock(t, d, "push", repo+":v1"); !strings.Contains(out, "Layer already exists") || !strings.Contains(out, dgst) {
		t.Fatalf("second push:\n%s", out)
	}
	// Another repository of the same registry: the layer is mounted.
	d.MustCLI(t, "tag", "busybox", reg.Addr+"/other:v1")
	if out := d.MustCLI(t, "push", reg.Addr+"/other:v1"); !strings.Contains(out, "Mounted from busybox") {
		t.Fatalf("push to another repository:\n%s", out)
	}
	// One push event per tag pushed: the reference, and the repository
	// as its name.
	got := eventLines(t, d.Stock, pushSince, "--filter", "type=image", "--filter", "event=push", "--format", "{{.Actor.ID}} {{.Actor.Attributes.name}}")
	if want := []string{repo + ":v1 " + repo, repo + ":v1 " + repo, reg.Addr + "/other:v1 " + reg.Addr + "/other"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("push events %q, want %q", got, want)
	}

	d.MustCLI(t, "rmi", repo+":v1", reg.Addr+"/other:v1", "busybox")
	if r := d.CLI("image", "inspect", origID); r.Code == 0 {
		t.Fatalf("image still there after rmi")
	}

	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		pullSince := sinceNow()
		r := cli("pull", repo+":v1")
		if r.Code != 0 || !strings.Contains(r.Stdout, "v1: Pulling from busybox") || !strings.Contains(r.Stdout, "Digest: "+dgst) ||
			!strings.Contains(r.Stdout, "Status: Downloaded newer image for "+repo+":v1") {
			t.Fatalf("pull: %s", r)
		}
		id, rd := inspectImage(t, d, repo+":v1")
		if id != origID || !contains(rd, repo+"@"+dgst) {
			t.Fatalf("pulled %s %v, want %s with %s@%s", id, rd, origID, repo, dgst)
		}
		if r := cli("pull", repo+":v1"); r.Code != 0 || !strings.Contains(r.Stdout, "Image is up to date for "+repo+":v1") {
			t.Fatalf("second pull: %s", r)
		}
		d.MustCLI(t, "rmi", repo+":v1")

		r = cli("pull", repo+"@"+dgst)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Digest: "+dgst) {
			t.Fatalf("pull by digest: %s", r)
		}
		if id, _ := inspectImage(t, d, repo+"@"+dgst); id != origID {
			t.Fatalf("pulled by digest %s, want %s", id, origID)
		}
		got := eventLines(t, cli, pullSince, "--filter", "event=pull", "--filter", "image="+repo, "--format", "{{.Actor.ID}} {{.Actor.Attributes.name}}")
		if want := []string{repo + ":v1 " + repo, repo + ":v1 " + repo, repo + "@" + dgst + " " + repo}; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("pull events %q, want %q", got, want)
		}
		if out := d.MustCLI(t, "run", "--rm", repo+"@"+dgst, "echo", "pulled-ok"); out != "pulled-ok" {
			t.Fatalf("run the pulled image: %q", out)
		}
		d.MustCLI(t, "rmi", origID)
	})

	for _, c := range []struct{ ref, want string }{
		{reg.Addr + "/nope:v1", "pull access denied for " + reg.Addr + "/nope, repository does not exist or may require 'docker login'"},
		{repo + ":nope", "manifest for " + repo + ":nope not found: manifest unknown"},
	} {
		if r := d.Stock("pull", c.ref); r.Code == 0 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("pull %s: want %q, got %s", c.ref, c.want, r)
		}
	}
	if r := d.Stock("pull", "--platform", "foobar", repo+":v1"); r.Code == 0 || !strings.Contains(r.Stderr, "unknown operating system or architecture") {
		t.Errorf("pull --platform foobar: %s", r)
	}
}

// TestRegistryCorruptBlob: a registry serving a layer whose bytes do not
// match its digest is refused, and nothing of the pull stays.
func TestRegistryCorruptBlob(t *testing.T) {
	reg := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/busybox:v1"
	d.MustCLI(t, "tag", "busybox", repo)
	d.MustCLI(t, "push", repo)
	d.MustCLI(t, "rmi", repo, "busybox")

	// The one layer blob: the biggest file in the blob store.
	var biggest string
	var size int64
	filepath.Walk(filepath.Join(reg.Storage, "docker", "registry", "v2", "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > size {
			biggest, size = p, fi.Size()
		}
		return nil
	})
	f, err := os.OpenFile(biggest, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("corrupted!corrupted!"), size/2); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r := d.Stock("pull", repo)
	if r.Code == 0 {
		t.Fatalf("pull of a corrupted blob succeeded: %s", r)
	}
	if !strings.Contains(r.Stderr, "filesystem layer verification failed for digest sha256:") {
		t.Errorf("error does not name the digest check: %s", r)
	}
	if out := d.MustCLI(t, "images", "-a", "-q"); out != "" {
		t.Errorf("images left after a refused pull: %s", out)
	}
	for _, dir := range []string{filepath.Join(d.Root, "graph"), filepath.Join(d.Root, "image", "tmp")} {
		if ents, _ := os.ReadDir(dir); len(nonDriverEntries(ents)) > 0 {
			t.Errorf("%s not empty after a refused pull: %v", dir, ents)
		}
	}
}

// nonDriverEntries drops the graph driver's own bookkeeping directories.
func nonDriverEntries(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		switch e.Name() {
		case "l", "overlay2", "vfs", "metacopy-check", "backingFsBlockDev":
			continue
		}
		out = append(out, e.Name())
	}
	return out
}

// runWithConfig runs a CLI with its own DOCKER_CONFIG (credentials).
func runWithConfig(bin string, d *Daemon, cfgDir, stdin string, args ...string) Result {
	old, had := os.LookupEnv("DOCKER_CONFIG")
	os.Setenv("DOCKER_CONFIG", cfgDir)
	defer func() {
		if had {
			os.Setenv("DOCKER_CONFIG", old)
		} else {
			os.Unsetenv("DOCKER_CONFIG")
		}
	}()
	return run(bin, d.Host(), stdin, args...)
}

// TestRegistryAuth logs in to a registry with htpasswd basic auth behind
// a self-signed certificate (loopback: insecure by default, as in
// Docker), with both CLIs, then pushes and pulls through it; a wrong
// password gets Docker's 401 message, and no credentials a refusal.
func TestRegistryAuth(t *testing.T) {
	reg := startRegistry(t, true)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/private/busybox:v1"
	d.MustCLI(t, "tag", "busybox", repo)
	origID, _ := inspectImage(t, d, repo)

	for _, c := range []struct{ name, bin string }{{"ours", ourCLI}, {"stock", stockCLI}} {
		bin := c.bin
		t.Run(c.name, func(t *testing.T) {
			cfg := t.TempDir()
			r := runWithConfig(bin, d, cfg, "wrong\n", "login", "-u", reg.User, "--password-stdin", reg.Addr)
			if r.Code == 0 || !strings.Contains(r.Stderr, "401 Unauthorized") {
				t.Fatalf("login with a wrong password: %s", r)
			}
			if r := runWithConfig(bin, d, cfg, "", "push", repo); r.Code == 0 || !strings.Contains(r.Stderr, "no basic auth credentials") && !strings.Contains(r.Stderr, "unauthorized") {
				t.Fatalf("push without login: %s", r)
			}
			r = runWithConfig(bin, d, cfg, reg.Pass+"\n", "login", "-u", reg.User, "--password-stdin", reg.Addr)
			if r.Code != 0 || !strings.Contains(r.Stdout, "Login Succeeded") {
				t.Fatalf("login: %s", r)
			}
			if r := runWithConfig(bin, d, cfg, "", "push", repo); r.Code != 0 || !pushDigest.MatchString(r.Stdout) {
				t.Fatalf("push after login: %s", r)
			}
			d.MustCLI(t, "rmi", repo)
			if r := runWithConfig(bin, d, t.TempDir(), "", "pull", repo); r.Code == 0 || !strings.Contains(r.Stderr, "pull access denied") {
				t.Fatalf("pull without credentials: %s", r)
			}
			if r := runWithConfig(bin, d, cfg, "", "pull", repo); r.Code != 0 {
				t.Fatalf("pull after login: %s", r)
			}
			if id, _ := inspectImage(t, d, repo); id != origID {
				t.Fatalf("pulled %s, want %s", id, origID)
			}
			if r := runWithConfig(bin, d, cfg, "", "logout", reg.Addr); r.Code != 0 || !strings.Contains(r.Stdout, "Removing login credentials") {
				t.Fatalf("logout: %s", r)
			}
		})
	}
}

// TestRegistryMirrorFor: --registry-mirror-for serves another registry's
// names (here registry.k8s.io, which a test must never reach) from a
// registry on loopback, and `docker info` shows the mirror.
func TestRegistryMirrorFor(t *testing.T) {
	reg := startRegistry(t, false)
	src := NewDaemon(t)
	src.Start(t)
	defer src.Cleanup(t)
	loadBusybox(t, src)
	src.MustCLI(t, "tag", "busybox", reg.Addr+"/e2e-test-images/busybox:1.29-2")
	src.MustCLI(t, "push", reg.Addr+"/e2e-test-images/busybox:1.29-2")

	d := NewDaemon(t, "--registry-mirror-for", "registry.k8s.io=http://"+reg.Addr)
	d.Start(t)
	defer d.Cleanup(t)
	ref := "registry.k8s.io/e2e-test-images/busybox:1.29-2"
	if r := d.Stock("pull", ref); r.Code != 0 || !strings.Contains(r.Stdout, "Downloaded newer image for "+ref) {
		t.Fatalf("pull through the mirror: %s", r)
	}
	if out := d.MustCLI(t, "run", "--rm", ref, "echo", "mirrored"); out != "mirrored" {
		t.Fatalf("run the mirrored image: %q", out)
	}
	out := d.MustCLI(t, "info", "--format", `{{json (index .RegistryConfig.IndexConfigs "registry.k8s.io").Mirrors}}`)
	if want := `["http://` + reg.Addr + `/"]`; out != want {
		t.Errorf("info mirrors of registry.k8s.io = %s, want %s", out, want)
	}
}
