package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerate runs the whole generator against the real commands and the
// real man/src, and checks the pages the packaging promises.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	o := options{
		manDir:        filepath.Join(dir, "man"),
		mdDir:         filepath.Join(dir, "md"),
		completionDir: filepath.Join(dir, "completion"),
		srcDir:        filepath.Join("..", "..", "man", "src"),
	}
	if err := generate(o); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// Both names of run carry the --init section; create does too.
	for _, p := range []string{"man/man1/docker-run.1", "man/man1/docker-container-run.1", "man/man1/docker-create.1"} {
		page := read(p)
		if !strings.Contains(page, "<name|uid>") {
			t.Errorf("%s: angle brackets of a usage were eaten as HTML", p)
		}
		if !strings.Contains(page, ".SH THE --init OPTION") || !strings.Contains(page, "SIGRTMIN+3") {
			t.Errorf("%s lacks the --init section:\n%s", p, page)
		}
	}
	if page := read("man/man8/dockerd.8"); !strings.Contains(page, `.TH "DOCKERD" "8"`) || !strings.Contains(page, ".SH FILES") || strings.Contains(page, "[flags]") {
		t.Errorf("dockerd.8:\n%s", page)
	}
	if page := read("man/man1/docker.1"); !strings.Contains(page, `.TH "DOCKER" "1"`) {
		t.Errorf("docker.1 header:\n%s", page[:200])
	}
	// The markdown nests the man sections under its own headings.
	if md := read("md/docker_run.md"); !strings.Contains(md, "\n#### THE --init OPTION\n") || strings.Contains(md, "Auto generated") {
		t.Errorf("docker_run.md:\n%s", md)
	}
	if read("md/dockerd.md") == "" {
		t.Error("empty dockerd.md")
	}
	for _, p := range []string{"completion/bash/docker", "completion/fish/docker.fish", "completion/zsh/_docker"} {
		if s := read(p); !strings.Contains(s, "__complete") {
			t.Errorf("%s does not call docker __complete", p)
		}
	}
}

func TestReadSourceInclude(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("top\n@include b.md\nend\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.md"), []byte("# B\nbody\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "loop.md"), []byte("@include loop.md\n"), 0o644)
	got, err := readSource(dir, "a.md", 0)
	if err != nil || got != "top\n# B\nbody\nend" {
		t.Errorf("include: %q, %v", got, err)
	}
	if _, err := readSource(dir, "loop.md", 0); err == nil {
		t.Error("an include loop did not fail")
	}
	if _, err := readSource(dir, "missing.md", 0); !os.IsNotExist(err) {
		t.Errorf("missing page: %v", err)
	}
}

func TestDemoteHeadings(t *testing.T) {
	in := "# A\ntext\n```\n# not a heading\n```\n## B"
	want := "### A\ntext\n```\n# not a heading\n```\n#### B"
	if got := demoteHeadings(in, 2); got != want {
		t.Errorf("got %q", got)
	}
}

// TestReferenceWithoutHome: defaults under the home directory are written
// with ~, whoever generates the reference.
func TestReferenceWithoutHome(t *testing.T) {
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("HOME", "/home/generator")
	docker, dockerd := trees()
	for _, c := range []struct{ tree, flag string }{{"docker", "tlscacert"}, {"dockerd", "tlscacert"}, {"dockerd", "tlskey"}} {
		root := docker
		if c.tree == "dockerd" {
			root = dockerd
		}
		f := root.Flags().Lookup(c.flag)
		if f == nil {
			t.Fatalf("%s has no --%s", c.tree, c.flag)
		}
		if !strings.HasPrefix(f.DefValue, "~/.docker/") {
			t.Errorf("%s --%s default %q", c.tree, c.flag, f.DefValue)
		}
	}
}
