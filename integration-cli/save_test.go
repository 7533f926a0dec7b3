//go:build integration

package integrationcli

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/docker/docker/client"
)

// savedManifest reads manifest.json's RepoTags from a docker save archive.
func savedManifest(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no manifest.json in %s: %v", path, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			t.Fatal(err)
		}
		var out [][]string
		for _, e := range m {
			sort.Strings(e.RepoTags)
			out = append(out, e.RepoTags)
		}
		sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], ",") < strings.Join(out[j], ",") })
		return out
	}
}

// TestSaveRepoDigestAndLoadProgress: save of a repository name saves all
// its tags, save of name@digest the image untagged; a load that is not
// quiet draws Docker's "Loading layer" bars.
func TestSaveRepoDigestAndLoadProgress(t *testing.T) {
	reg := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	dir := t.TempDir()
	for _, n := range []string{"one", "two"} {
		ctx := buildCtx(t, map[string]string{"Dockerfile": "FROM busybox\nRUN echo " + n + " > /" + n + "\n"})
		if r := d.CLI("build", "-q", "-t", "it-save-repo:"+n, ctx); r.Code != 0 {
			t.Fatalf("build: %s", r)
		}
	}
	d.MustCLI(t, "tag", "it-save-repo:one", "it-save-repo:alias")
	oneID, _ := inspectImage(t, d, "it-save-repo:one")

	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		out := filepath.Join(t.TempDir(), "repo.tar")
		if r := cli("save", "-o", out, "it-save-repo"); r.Code != 0 {
			t.Fatalf("save repo: %s", r)
		}
		got := savedManifest(t, out)
		want := [][]string{{"it-save-repo:alias", "it-save-repo:one"}, {"it-save-repo:two"}}
		if len(got) != 2 || strings.Join(got[0], ",") != strings.Join(want[0], ",") || strings.Join(got[1], ",") != strings.Join(want[1], ",") {
			t.Fatalf("save of the repository: %v, want %v", got, want)
		}
		// Several names, one image named twice: one entry, both tags.
		if r := cli("save", "-o", out, "it-save-repo:one", "it-save-repo:alias", "busybox"); r.Code != 0 {
			t.Fatalf("save several: %s", r)
		}
		if got := savedManifest(t, out); len(got) != 2 {
			t.Fatalf("save of several names: %v", got)
		}
	})

	// name@digest (a repo digest from a push): the image, untagged.
	repo := reg.Addr + "/saved"
	d.MustCLI(t, "tag", "it-save-repo:one", repo+":one")
	m := pushDigest.FindStringSubmatch(d.MustCLI(t, "push", repo+":one"))
	if m == nil {
		t.Fatal("no digest in push output")
	}
	byDigest := filepath.Join(dir, "digest.tar")
	d.MustCLI(t, "save", "-o", byDigest, repo+"@"+m[2])
	if got := savedManifest(t, byDigest); len(got) != 1 || len(got[0]) != 0 {
		t.Fatalf("save of name@digest: %v, want one untagged image", got)
	}

	repoTar := filepath.Join(dir, "repo.tar")
	d.MustCLI(t, "save", "-o", repoTar, "it-save-repo")
	d.MustCLI(t, "rmi", "it-save-repo:one", "it-save-repo:two", "it-save-repo:alias", repo+":one")
	f, err := os.Open(repoTar)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resp, err := d.Client(t).ImageLoad(context.Background(), f, client.ImageLoadWithQuiet(false))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := string(body)
	if strings.Count(s, `"status":"Loading layer"`) < 2 || !strings.Contains(s, `"progressDetail":{"current":`) ||
		!strings.Contains(s, "Loaded image: it-save-repo:two") || !strings.Contains(s, "Loaded image: it-save-repo:alias") {
		t.Fatalf("load progress:\n%s", s)
	}
	if id, _ := inspectImage(t, d, "it-save-repo:one"); id != oneID {
		t.Fatalf("loaded %s, want %s", id, oneID)
	}
	// Quiet: no bars.
	d.MustCLI(t, "rmi", "it-save-repo:one", "it-save-repo:two", "it-save-repo:alias")
	if f, err = os.Open(repoTar); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resp, err = d.Client(t).ImageLoad(context.Background(), f, client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "Loading layer") || !strings.Contains(string(body), "Loaded image: it-save-repo:one") {
		t.Fatalf("quiet load:\n%s", body)
	}
}
