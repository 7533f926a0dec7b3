package dockerfile

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/pkg/errdefs"
)

// fakeBackend keeps images in memory and records what the builder asks;
// RUN only records its command, layers are plain directories.
type fakeBackend struct {
	images   map[string]*Image
	parent   map[string]string
	runs     [][]string
	layers   map[string]string
	tmp      string
	n        int
	commits  int
	exitCode int
	onRun    func() // called by RunContainer (a test cancelling the build)
	removed  []string
}

func newFake(t *testing.T) *fakeBackend {
	f := &fakeBackend{images: map[string]*Image{}, parent: map[string]string{}, layers: map[string]string{}, tmp: t.TempDir()}
	base := &Config{}
	base.OS, base.Architecture = "linux", "amd64"
	base.Config.Env = []string{"PATH=/bin"}
	f.images["busybox"] = &Image{ID: "sha256:" + strings.Repeat("b", 64), Config: base}
	f.images[f.images["busybox"].ID] = f.images["busybox"]
	return f
}

func (f *fakeBackend) GetImage(_ context.Context, ref string) (*Image, error) {
	if img, ok := f.images[ref]; ok {
		return img, nil
	}
	return nil, errdefs.NotFound(fmt.Errorf("No such image: %s", ref))
}

func (f *fakeBackend) ImageChildren(_ context.Context, id string) ([]*Image, error) {
	var out []*Image
	for c, p := range f.parent {
		if p == id {
			out = append(out, f.images[c])
		}
	}
	return out, nil
}

func (f *fakeBackend) CreateContainer(_ context.Context, o ContainerOptions) (string, error) {
	f.n++
	f.runs = append(f.runs, o.Config.Entrypoint)
	return fmt.Sprintf("%064d", f.n), nil
}

func (f *fakeBackend) RunContainer(ctx context.Context, id string, out io.Writer) (int, error) {
	if f.onRun != nil {
		f.onRun()
		return 137, ctx.Err()
	}
	return f.exitCode, nil
}
func (f *fakeBackend) RemoveContainer(_ context.Context, id string) error {
	f.removed = append(f.removed, id)
	return nil
}
func (f *fakeBackend) CreateLayer(_ context.Context, image string) (string, string, error) {
	f.n++
	id := fmt.Sprint("layer", f.n)
	dir := filepath.Join(f.tmp, id)
	f.layers[id] = dir
	return id, dir, os.MkdirAll(dir, 0o755)
}
func (f *fakeBackend) RemoveLayer(context.Context, string) error { return nil }
func (f *fakeBackend) Commit(_ context.Context, o CommitOptions) (string, error) {
	f.commits++
	data, _ := json.Marshal(o.Config)
	id := digest.FromBytes(data).String()
	f.images[id] = &Image{ID: id, Config: o.Config}
	f.parent[id] = o.Parent
	return id, nil
}
func (f *fakeBackend) TagImage(_ context.Context, id, ref string) error {
	f.images[ref] = f.images[id]
	return nil
}

func contextTar(t *testing.T, files map[string]string, links map[string]string) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write([]byte(data))
	}
	for name, target := range links {
		tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink, Mode: 0o777})
	}
	tw.Close()
	return &buf
}

func build(t *testing.T, f *fakeBackend, opts Options, files map[string]string, links map[string]string) (string, string, error) {
	t.Helper()
	b, err := Prepare(context.Background(), f, opts, contextTar(t, files, links), t.TempDir())
	if err != nil {
		return "", "", err
	}
	defer b.Close()
	var out bytes.Buffer
	id, err := b.Run(context.Background(), &out)
	return id, out.String(), err
}

func TestDispatchConfigInstructions(t *testing.T) {
	f := newFake(t)
	df := `FROM busybox
ENV A=1 B="two words"
LABEL l=v
USER nobody
WORKDIR /w
WORKDIR sub
EXPOSE 80 53/udp
VOLUME /data
STOPSIGNAL SIGKILL
SHELL ["/bin/bash", "-c"]
CMD echo $A
ENTRYPOINT ["/e"]
ONBUILD RUN touch /x
HEALTHCHECK CMD true
`
	id, out, err := build(t, f, Options{Tags: []string{"x"}}, map[string]string{"Dockerfile": df}, nil)
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	c := f.images[id].Config.Config
	if c.WorkingDir != "/w/sub" || c.User != "nobody" || c.Labels["l"] != "v" || c.StopSignal != "SIGKILL" {
		t.Errorf("config: %+v", c)
	}
	if strings.Join(c.Env, ",") != "PATH=/bin,A=1,B=two words" {
		t.Errorf("env: %v", c.Env)
	}
	if _, ok := c.ExposedPorts["53/udp"]; !ok {
		t.Errorf("ports: %v", c.ExposedPorts)
	}
	// ENTRYPOINT after CMD in the same stage keeps CMD.
	if strings.Join(c.Cmd, " ") != "/bin/bash -c echo $A" || strings.Join(c.Entrypoint, " ") != "/e" {
		t.Errorf("cmd %q entrypoint %q", c.Cmd, c.Entrypoint)
	}
	if len(c.OnBuild) != 1 || c.Healthcheck == nil || c.Healthcheck.Test[0] != "CMD-SHELL" {
		t.Errorf("onbuild %v healthcheck %v", c.OnBuild, c.Healthcheck)
	}
	if !strings.Contains(out, `"Step 1/14 : FROM busybox\n"`) || !strings.Contains(out, "Successfully tagged x:latest") {
		t.Errorf("output:\n%s", out)
	}
	if h := f.images[id].Config.History; h[len(h)-1].CreatedBy != `/bin/bash -c #(nop)  HEALTHCHECK &{["CMD-SHELL" "true"] "0s" "0s" "0s" "0s" '\x00'}` {
		t.Errorf("history: %q", h[len(h)-1].CreatedBy)
	}
}

func TestCacheKeys(t *testing.T) {
	f := newFake(t)
	df := "FROM busybox\nARG V=1\nRUN echo $V\nCOPY a /a\n"
	files := map[string]string{"Dockerfile": df, "a": "one"}
	id1, _, err := build(t, f, Options{}, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	commits := f.commits
	// Unchanged: every step from the cache, the same image.
	id2, out, err := build(t, f, Options{}, files, nil)
	if err != nil || id2 != id1 || f.commits != commits || strings.Count(out, "Using cache") != 3 {
		t.Fatalf("rebuild: %v %s %s commits %d->%d\n%s", err, id1, id2, commits, f.commits, out)
	}
	// A build arg is part of RUN's key (not ARG's, as in Docker); a
	// changed source is part of COPY's.
	v := "2"
	if _, out, _ := build(t, f, Options{BuildArgs: map[string]*string{"V": &v}}, files, nil); strings.Count(out, "Using cache") != 1 {
		t.Errorf("build arg changed but cache used:\n%s", out)
	}
	files["a"] = "two"
	if _, out, _ := build(t, f, Options{}, files, nil); strings.Count(out, "Using cache") != 2 {
		t.Errorf("source changed: want ARG and RUN cached only:\n%s", out)
	}
	if _, out, _ := build(t, f, Options{NoCache: true}, files, nil); strings.Contains(out, "Using cache") {
		t.Errorf("nocache used the cache:\n%s", out)
	}
	if got := f.runs[0]; strings.Join(got, " ") != "/bin/sh -c echo $V" {
		t.Errorf("RUN argv %q", got)
	}
	if h := f.images[id1].Config.History; h[1].CreatedBy != "|1 V=1 /bin/sh -c echo $V" {
		t.Errorf("RUN history %q", h[1].CreatedBy)
	}
}

func TestContextConfinement(t *testing.T) {
	f := newFake(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("host secret"), 0o600)
	files := map[string]string{"Dockerfile": "FROM busybox\nCOPY link /got\n", "../up": "x"}
	_, out, err := build(t, f, Options{}, files, map[string]string{"link": secret})
	if err == nil || !strings.Contains(err.Error(), "file not found in build context") {
		t.Fatalf("escaping symlink: err %v\n%s", err, out)
	}
	// A link to a path inside the context is followed.
	files["Dockerfile"] = "FROM busybox\nCOPY link /got\n"
	files["inner"] = "in"
	_, out, err = build(t, f, Options{}, files, map[string]string{"link": "inner"})
	if err != nil {
		t.Fatalf("inner link: %v\n%s", err, out)
	}
	for _, dir := range f.layers {
		if data, err := os.ReadFile(filepath.Join(dir, "got")); err == nil && string(data) != "in" {
			t.Errorf("copied %q", data)
		}
	}
}

func TestDockerignore(t *testing.T) {
	f := newFake(t)
	files := map[string]string{"Dockerfile": "FROM busybox\nCOPY . /c/\n", ".dockerignore": "secret*\n!secret-ok\n", "secret1": "s", "secret-ok": "k", "keep": "k"}
	_, out, err := build(t, f, Options{}, files, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var dir string
	for _, d := range f.layers {
		dir = d
	}
	for name, want := range map[string]bool{"secret1": false, "secret-ok": true, "keep": true} {
		_, err := os.Stat(filepath.Join(dir, "c", name))
		if (err == nil) != want {
			t.Errorf("%s copied=%v, want %v", name, err == nil, want)
		}
	}
}

func TestErrors(t *testing.T) {
	f := newFake(t)
	for _, tc := range []struct{ df, want string }{
		{"", "the Dockerfile (Dockerfile) cannot be empty"},
		{"# only\n", "file with no instructions"},
		{"FROM busybox\nBOGUS x\n", "dockerfile parse error on line 2: unknown instruction: BOGUS"},
		{"FROM busybox\nCOPY missing /x\n", "stat missing: file does not exist"},
		{"FROM nosuchimage\n", "nosuchimage"},
	} {
		_, _, err := build(t, f, Options{}, map[string]string{"Dockerfile": tc.df}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.df, err, tc.want)
		}
	}
	f.exitCode = 3
	_, out, err := build(t, f, Options{}, map[string]string{"Dockerfile": "FROM busybox\nRUN false\n"}, nil)
	want := "The command '/bin/sh -c false' returned a non-zero code: 3"
	if err == nil || err.Error() != want || !strings.Contains(out, `"errorDetail":{"code":3,"message":"`+want) {
		t.Errorf("RUN failure: %v\n%s", err, out)
	}
}

func TestApplyChanges(t *testing.T) {
	var c dockerspec.DockerOCIImageConfig
	c.Env = []string{"A=1"}
	err := ApplyChanges(&c, []string{`CMD ["a", "b"]`, "ENV B=2", "WORKDIR /x", "EXPOSE 80"})
	if err != nil || strings.Join(c.Cmd, ",") != "a,b" || len(c.Env) != 2 || c.WorkingDir != "/x" {
		t.Errorf("%v %+v", err, c)
	}
	if err := ApplyChanges(&c, []string{"RUN true"}); err == nil || !strings.Contains(err.Error(), "RUN is not a valid change command") {
		t.Errorf("RUN change: %v", err)
	}
}

// A RUN whose build is cancelled (the client went away) has its
// container removed, as Docker does; a RUN that fails keeps it (without
// --force-rm), as Docker does.
func TestRunContainerRemovedWhenCancelled(t *testing.T) {
	df := map[string]string{"Dockerfile": "FROM busybox\nRUN sleep 300\n"}
	f := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.onRun = cancel
	b, err := Prepare(ctx, f, Options{Remove: true}, contextTar(t, df, nil), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := b.Run(ctx, &out); err == nil {
		t.Fatalf("a cancelled build succeeded: %s", out.String())
	}
	b.Close()
	if len(f.removed) != 1 {
		t.Errorf("containers removed after the cancel: %v, want the RUN's", f.removed)
	}

	f = newFake(t)
	f.exitCode = 1
	if _, out, err := build(t, f, Options{Remove: true}, df, nil); err == nil || len(f.removed) != 0 {
		t.Errorf("failed RUN: err %v, removed %v (want kept without --force-rm)\n%s", err, f.removed, out)
	}
}
