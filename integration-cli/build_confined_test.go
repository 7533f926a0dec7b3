//go:build integration

package integrationcli

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
)

// TestBuildDotDotConfined: a COPY source climbing out with ".." names a
// file of the context (there is none), never the host's, with both
// builders.
func TestBuildDotDotConfined(t *testing.T) {
	builders(t, func(t *testing.T, build func(args ...string) Result) {
		dir := buildCtx(t, map[string]string{"Dockerfile": "FROM busybox\nCOPY ../../../../etc/os-release /x\n"})
		r := build("-t", "it-dotdot:v1", dir)
		if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "does not exist") && !strings.Contains(r.Stdout+r.Stderr, "outside the build context") {
			t.Fatalf("COPY of ../../../../etc/os-release: %s", r)
		}
		if imageID(shared, "it-dotdot:v1") != "" {
			t.Fatal("the build made an image")
		}
	})
}

// TestBuildContextTarConfined: a context tar whose entry names climb out
// ("../../x") or go through an absolute path is extracted inside the
// context (or refused): nothing lands outside it.
func TestBuildContextTarConfined(t *testing.T) {
	mark := fmt.Sprintf("it-escape-%d", time.Now().UnixNano())
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name, data string) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write([]byte(data))
	}
	add("Dockerfile", "FROM busybox\nCOPY . /ctx\nRUN ls -R /ctx\n")
	add("../../../../../../tmp/"+mark, "escaped\n")
	add("/tmp/"+mark+"-abs", "escaped\n")
	tw.Close()

	c := shared.Client(t)
	resp, err := c.ImageBuild(context.Background(), &buf, build.ImageBuildOptions{Tags: []string{"it-tarconfined:v1"}, Remove: true})
	if err == nil {
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("build output:\n%s", out)
	}
	for _, p := range []string{"/tmp/" + mark, "/tmp/" + mark + "-abs", "/" + mark} {
		if fileExists(p) {
			os.Remove(p)
			t.Errorf("the context escaped to %s", p)
		}
	}
	filepath.Walk(shared.Dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if fi.IsDir() && fi.Name() == "graph" {
			return filepath.SkipDir // the image's own /ctx copy lives there
		}
		if strings.HasPrefix(fi.Name(), mark) {
			t.Errorf("a context entry landed outside the context: %s", p)
		}
		return nil
	})
	if imageID(shared, "it-tarconfined:v1") != "" {
		if out := shared.MustCLI(t, "run", "--rm", "it-tarconfined:v1", "find", "/", "-name", mark+"*", "-not", "-path", "/proc/*"); out != "" {
			for _, l := range strings.Split(out, "\n") {
				if !strings.HasPrefix(l, "/ctx/") {
					t.Errorf("entry outside /ctx in the image: %s", l)
				}
			}
		}
		shared.MustCLI(t, "rmi", "it-tarconfined:v1")
	}
}
