//go:build integration

package integrationcli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildCtx writes a build context directory.
func buildCtx(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// stockBuild runs the stock CLI's classic builder (DOCKER_BUILDKIT=0).
func stockBuild(args ...string) Result {
	cmd := exec.Command(stockCLI, append([]string{"build"}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+shared.Host(), "DOCKER_BUILDKIT=0", "DOCKER_CLI_HINTS=false")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// builders runs f with the stock CLI's classic builder and with ours.
func builders(t *testing.T, f func(t *testing.T, build func(args ...string) Result)) {
	t.Run("stock", func(t *testing.T) { f(t, stockBuild) })
	t.Run("ours", func(t *testing.T) {
		f(t, func(args ...string) Result { return shared.CLI(append([]string{"build"}, args...)...) })
	})
}

const tenSteps = `FROM busybox AS base
ENV GREETING=hello
WORKDIR /app
COPY greet.txt .
RUN echo "$GREETING from RUN" > /app/run.txt
FROM busybox
COPY --from=base /app /app
LABEL it=build
EXPOSE 8080
CMD ["cat", "/app/greet.txt", "/app/run.txt"]
`

func TestBuildMultiStageAndCache(t *testing.T) {
	builders(t, func(t *testing.T, build func(args ...string) Result) {
		dir := buildCtx(t, map[string]string{"Dockerfile": tenSteps, "greet.txt": "greetings\n"})
		tag := "it-build-multi:" + strings.ToLower(filepath.Base(t.Name()))
		defer shared.CLI("rmi", tag)
		start := time.Now()
		r := build("--no-cache", "-t", tag, dir)
		cold := time.Since(start)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Successfully tagged "+tag) {
			t.Fatalf("build: %s", r)
		}
		if out := shared.MustCLI(t, "run", "--rm", tag); out != "greetings\nhello from RUN" {
			t.Errorf("run: %q", out)
		}
		start = time.Now()
		r = build("-t", tag, dir)
		cached := time.Since(start)
		if r.Code != 0 || strings.Count(r.Stdout, "Using cache") != 8 {
			t.Fatalf("cached build: %s", r)
		}
		t.Logf("10-instruction Dockerfile: cold %s, cached %s", cold, cached)
		if cached > time.Second {
			t.Errorf("cached rebuild took %s, want under a second", cached)
		}
		h := shared.MustCLI(t, "history", tag)
		if !strings.Contains(h, `CMD ["cat" "/app/greet.tx`) || strings.Count(h, "\n") != 5 {
			t.Errorf("history:\n%s", h)
		}
	})
}

func TestBuildErrors(t *testing.T) {
	builders(t, func(t *testing.T, build func(args ...string) Result) {
		secret := filepath.Join(t.TempDir(), "host-secret")
		os.WriteFile(secret, []byte("host secret\n"), 0o600)
		for _, tc := range []struct {
			dockerfile string
			want       string
			code       int
		}{
			{"FROM busybox\nRUN false\n", "The command '/bin/sh -c false' returned a non-zero code: 1", 1},
			{"FROM busybox\nRUN exit 7\n", "returned a non-zero code: 7", 7},
			{"FROM busybox\nBOGUS x\n", "dockerfile parse error on line 2: unknown instruction: BOGUS", 1},
			{"FROM busybox\nCOPY missing.txt /\n", "stat missing.txt: file does not exist", 1},
			{"", "the Dockerfile (Dockerfile) cannot be empty", 1},
			// The symlink points at a host file: resolved inside the
			// context it names nothing.
			{"FROM busybox\nCOPY escape /x\n", "stat escape: file does not exist", 1},
		} {
			dir := buildCtx(t, map[string]string{"Dockerfile": tc.dockerfile})
			os.Symlink(secret, filepath.Join(dir, "escape"))
			r := build(dir)
			if r.Code != tc.code || !strings.Contains(r.Stdout+r.Stderr, tc.want) {
				t.Errorf("%q: want exit %d and %q, got %s", tc.dockerfile, tc.code, tc.want, r)
			}
		}
		// A directory holding the escaping link is copied as a link, never
		// the host file's content.
		dir := buildCtx(t, map[string]string{"Dockerfile": "FROM busybox\nCOPY sub /sub\nRUN ! grep -r 'host secret' /sub 2>/dev/null\n"})
		os.Mkdir(filepath.Join(dir, "sub"), 0o755)
		os.Symlink(secret, filepath.Join(dir, "sub", "escape"))
		if r := build("--rm", dir); r.Code != 0 {
			t.Errorf("context with escaping links: %s", r)
		}
	})
}

func TestBuildRunWritesRunSeenBySystemd(t *testing.T) {
	needSystemdImage(t)
	dir := buildCtx(t, map[string]string{"Dockerfile": "FROM " + systemdImage + "\nRUN mkdir -p /run/it-build && echo written-by-build > /run/it-build/marker\n"})
	tag := "it-build-systemd-run"
	defer shared.CLI("rmi", tag)
	if r := stockBuild("-t", tag, dir); r.Code != 0 {
		t.Fatalf("build: %s", r)
	}
	id := remember(shared.MustCLI(t, "run", "-d", "--init=systemd", tag))
	defer shared.CLI("rm", "-f", id)
	waitBooted(t, id)
	out := shared.MustCLI(t, "exec", id, "sh", "-c", "cat /run/it-build/marker; stat -f -c %T /run")
	if out != "written-by-build\ntmpfs" {
		t.Errorf("/run in the systemd container: %q", out)
	}
}

func TestCommitChangesAndHistory(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(args ...string) Result) {
		name := "it-commit-" + filepath.Base(t.Name())
		tag := "it-commit:" + filepath.Base(t.Name())
		defer shared.CLI("rm", "-f", name)
		defer shared.CLI("rmi", tag)
		shared.MustCLI(t, "run", "--name", name, "busybox", "sh", "-c", "echo committed > /c.txt && rm /bin/vi")
		if r := cli("commit", "-c", `CMD ["cat", "/c.txt"]`, "-c", "ENV IT=1", "-m", "the message", "-a", "it", name, tag); r.Code != 0 {
			t.Fatalf("commit: %s", r)
		}
		if out := shared.MustCLI(t, "run", "--rm", tag); out != "committed" {
			t.Errorf("run: %q", out)
		}
		if r := shared.CLI("run", "--rm", tag, "ls", "/bin/vi"); r.Code == 0 {
			t.Errorf("a file removed in the container is back in the image: %s", r)
		}
		got := shared.MustCLI(t, "inspect", "-f", "{{.Comment}}|{{.Author}}|{{.Config.Env}}|{{.Config.Cmd}}", tag)
		if got != "the message|it|[IT=1]|[cat /c.txt]" {
			t.Errorf("inspect: %q", got)
		}
		h := cli("history", tag)
		if h.Code != 0 || !strings.Contains(h.Stdout, "the message") || strings.Count(h.Stdout, "\n") != 3 {
			t.Errorf("history: %s", h)
		}
	})
}
