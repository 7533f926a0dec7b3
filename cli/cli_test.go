package cli

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sdengine/engine/internal/testenv"
)

// These tests drive the whole CLI against a real Docker-API daemon: the one
// SDENGINE_CLI_TEST_HOST names (e.g. Docker's, see
// hack/cli-against-docker.sh), or else a private dockerd of this tree that
// the test starts itself (daemon_test.go).

type result struct {
	out, err string
	code     int
}

// daemonHost is the -H value docker uses; needDaemon sets it.
var daemonHost string

func docker(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(append([]string{"-H", daemonHost}, args...), io.NopCloser(strings.NewReader(stdin)), &out, &errb)
	return result{out.String(), errb.String(), code}
}

// needDaemon points docker at SDENGINE_CLI_TEST_HOST, or at a private
// daemon started for t and stopped when t ends.
func needDaemon(t *testing.T) {
	t.Helper()
	if daemonHost = os.Getenv("SDENGINE_CLI_TEST_HOST"); daemonHost == "" {
		daemonHost = startPrivateDaemon(t)
	}
}

// busyboxTar builds a rootfs tar from the host's static busybox.
func busyboxTar(t *testing.T) string {
	testenv.RequireExecutable(t, "/bin/busybox", "busybox-static")
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rootfs.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bb))})
	tw.Write(bb)
	for _, a := range []string{"sh", "cat", "echo", "sleep", "true", "id", "env", "pwd", "hostname"} {
		tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

var fullID = regexp.MustCompile(`^[0-9a-f]{64}\n$`)

func TestAgainstDaemon(t *testing.T) {
	needDaemon(t)
	const img = "sdengine-cli-test:1"
	if r := docker(t, "", "import", "-c", `CMD ["sh"]`, busyboxTar(t), img); r.code != 0 || !strings.HasPrefix(r.out, "sha256:") {
		t.Fatalf("import: %+v", r)
	}
	defer docker(t, "", "rmi", "-f", img)

	r := docker(t, "", "run", "--rm", img, "sh", "-c", "echo out; echo err >&2; exit 3")
	if r.code != 3 || r.out != "out\n" || !strings.HasSuffix(r.err, "err\n") {
		t.Fatalf("run exit 3: %+v", r)
	}
	r = docker(t, "piped\n", "run", "--rm", "-i", img, "cat")
	if r.code != 0 || r.out != "piped\n" {
		t.Fatalf("run -i: %+v", r)
	}
	r = docker(t, "", "run", "--rm", img, "/no/such")
	if r.code != 127 {
		t.Fatalf("missing binary: %+v", r)
	}
	r = docker(t, "", "run", "--no-such-flag", img)
	if r.code != 125 || !strings.Contains(r.err, "unknown flag") {
		t.Fatalf("unknown flag: %+v", r)
	}

	r = docker(t, "", "run", "-d", "--name", "sdengine-cli-t", "-l", "suite=cli", "-e", "X=1", img, "sh", "-c",
		`echo started; trap 'echo bye; exit 0' TERM; while true; do sleep 0.1; done`)
	if r.code != 0 || !fullID.MatchString(r.out) {
		t.Fatalf("run -d: %+v", r)
	}
	defer docker(t, "", "rm", "-f", "sdengine-cli-t")
	id := strings.TrimSpace(r.out)
	if r := docker(t, "", "ps", "-q", "--no-trunc", "--filter", "label=suite=cli"); r.out != id+"\n" {
		t.Fatalf("ps filter: %+v", r)
	}
	if r := docker(t, "", "ps", "--filter", "name=sdengine-cli-t", "--format", "{{.Names}} {{.State}}"); r.out != "sdengine-cli-t running\n" {
		t.Fatalf("ps format: %+v", r)
	}
	if r := docker(t, "", "exec", "-e", "Y=2", "sdengine-cli-t", "sh", "-c", `echo "$X$Y"; exit 5`); r.code != 5 || r.out != "12\n" {
		t.Fatalf("exec: %+v", r)
	}
	if r := docker(t, "in\n", "exec", "-i", "sdengine-cli-t", "cat"); r.out != "in\n" {
		t.Fatalf("exec -i: %+v", r)
	}
	if r := docker(t, "", "inspect", "--format", "{{.State.Status}} {{.Config.Labels.suite}} {{.State.Pid}}", id); !regexp.MustCompile(`^running cli [1-9][0-9]*\n$`).MatchString(r.out) {
		t.Fatalf("inspect: %+v", r)
	}
	if r := docker(t, "", "stop", "-t", "5", "sdengine-cli-t"); r.code != 0 || r.out != "sdengine-cli-t\n" {
		t.Fatalf("stop: %+v", r)
	}
	if r := docker(t, "", "wait", id); r.out != "0\n" {
		t.Fatalf("wait: %+v", r)
	}
	if r := docker(t, "", "logs", id); r.out != "started\nbye\n" {
		t.Fatalf("logs: %+v", r)
	}
	if r := docker(t, "", "rm", id); r.code != 0 {
		t.Fatalf("rm: %+v", r)
	}
	if r := docker(t, "", "inspect", id); r.code != 1 || !strings.Contains(r.err, "No such object") || r.out != "[]\n" {
		t.Fatalf("inspect missing: %+v", r)
	}

	// Images: tag, list, save, load, rmi.
	if r := docker(t, "", "tag", img, "sdengine-cli-test:2"); r.code != 0 {
		t.Fatalf("tag: %+v", r)
	}
	if r := docker(t, "", "images", "--format", "{{.Repository}}:{{.Tag}}", "sdengine-cli-test"); r.out != "sdengine-cli-test:1\nsdengine-cli-test:2\n" {
		t.Fatalf("images: %+v", r)
	}
	saved := filepath.Join(t.TempDir(), "save.tar")
	if r := docker(t, "", "save", "-o", saved, "sdengine-cli-test:2"); r.code != 0 {
		t.Fatalf("save: %+v", r)
	}
	if r := docker(t, "", "rmi", "sdengine-cli-test:2"); r.out != "Untagged: sdengine-cli-test:2\n" {
		t.Fatalf("rmi: %+v", r)
	}
	if r := docker(t, "", "load", "-i", saved); r.code != 0 || !strings.Contains(r.out, "Loaded image: sdengine-cli-test:2") {
		t.Fatalf("load: %+v", r)
	}
	docker(t, "", "rmi", "sdengine-cli-test:2")
	if r := docker(t, "", "rmi", "sdengine-cli-nope:x"); r.code != 1 || !strings.Contains(r.err, "No such image") {
		t.Fatalf("rmi missing: %+v", r)
	}
}
