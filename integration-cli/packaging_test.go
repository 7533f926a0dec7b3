//go:build integration

package integrationcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
)

// The packaging tests check what the RPM ships, from the tree: the systemd
// units with our binaries under a real systemd, the generated man pages
// and the generated completion.

// TestPackagingSocketActivation installs docker.service and docker.socket
// with our binaries in a container that boots systemd, starts only the
// socket, and lets the first API call start dockerd through it.
func TestPackagingSocketActivation(t *testing.T) {
	needSystemdImage(t)
	start := time.Now()
	units := filepath.Join(repoRoot, "contrib", "init", "systemd")
	// Installed where the RPM puts them (read-only: the test must not be
	// able to change the tree's files).
	files := [][2]string{
		{dockerd, "/usr/bin/dockerd"},
		{ourCLI, "/usr/bin/docker"},
		{filepath.Join(units, "docker.service"), "/usr/lib/systemd/system/docker.service"},
		{filepath.Join(units, "docker.socket"), "/usr/lib/systemd/system/docker.socket"},
		{filepath.Join(units, "docker.sysusers"), "/usr/lib/sysusers.d/docker.conf"},
	}
	if shim := filepath.Join(repoRoot, "bin", "docker-shim"); exists(shim) {
		files = append(files, [2]string{shim, "/usr/libexec/docker/docker-shim"})
	}
	// Unprivileged: the daemon needs no more than this to serve the API
	// (it falls back to vfs when it cannot mount overlayfs).
	args := []string{"run", "-d", "--init=systemd", "--name", "pkg-socket"}
	for _, f := range files {
		args = append(args, "-v", f[0]+":"+f[1]+":ro")
	}
	id := remember(shared.MustCLI(t, append(args, systemdImage)...))
	defer shared.CLI("rm", "-f", id)
	waitBooted(t, id)

	sh := func(script string) Result { return shared.CLI("exec", id, "sh", "-c", script) }
	// sysusers.d makes the docker group the socket is owned by (the RPM's
	// %pre does the same with groupadd).
	// Without CAP_NET_ADMIN there is no default bridge to make, and dockerd
	// (as Docker's) refuses to start without the one it is told to make:
	// this host says it wants none.
	if r := sh(`mkdir -p /etc/docker && echo '{"bridge": "none"}' >/etc/docker/daemon.json`); r.Code != 0 {
		t.Fatalf("write daemon.json: %s", r)
	}
	if r := sh("systemd-sysusers && systemctl daemon-reload && systemctl start docker.socket"); r.Code != 0 {
		t.Fatalf("start docker.socket: %s\n%s", r, sh("journalctl -u docker.socket --no-pager").Stdout)
	}
	if out := strings.TrimSpace(sh("systemctl is-active docker.service").Stdout); out != "inactive" {
		t.Errorf("docker.service before the first connection: %q, want inactive", out)
	}
	if out := strings.TrimSpace(sh("stat -c '%U:%G %a' /run/docker.sock").Stdout); out != "root:docker 660" {
		t.Errorf("/run/docker.sock: %q, want root:docker 660", out)
	}
	// The first connection starts dockerd (-H fd://); Type=notify means
	// systemctl only calls it active once dockerd sent READY=1.
	r := sh("docker -H unix:///run/docker.sock version --format '{{.Server.Version}}'")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) == "" {
		t.Fatalf("docker version through the socket: %s\n%s", r, sh("journalctl -u docker.service --no-pager").Stdout)
	}
	if out := strings.TrimSpace(sh("systemctl is-active docker.service").Stdout); out != "active" {
		t.Errorf("docker.service after docker version: %q, want active\n%s", out, sh("journalctl -u docker.service --no-pager").Stdout)
	}
	if out := sh("systemctl show -p ExecMainPID --value docker.service; cat /proc/$(systemctl show -p ExecMainPID --value docker.service)/cmdline | tr '\\0' ' '").Stdout; !strings.Contains(out, "/usr/bin/dockerd -H fd://") {
		t.Errorf("dockerd command line: %q", out)
	}
	// STOPPING=1 and a clean exit: the stop is quick and the unit does
	// not end up failed.
	if r := sh("systemctl stop docker.service docker.socket"); r.Code != 0 {
		t.Errorf("systemctl stop: %s", r)
	}
	if out := strings.TrimSpace(sh("systemctl is-failed docker.service").Stdout); out == "failed" {
		t.Errorf("docker.service failed on stop:\n%s", sh("journalctl -u docker.service --no-pager").Stdout)
	}
	took := time.Since(start)
	t.Logf("boot, socket activation and stop: %s", took)
	if took > 30*time.Second {
		t.Errorf("socket-activation test took %s, want < 30s", took)
	}
}

// TestPackagingManPage renders the generated docker-run.1 with man -l.
func TestPackagingManPage(t *testing.T) {
	testenv.RequireExecutable(t, "man", "man-db groff-base")
	man, _ := exec.LookPath("man")
	dir := t.TempDir()
	genDocs(t, "-man", dir)
	cmd := exec.Command(man, "-l", filepath.Join(dir, "man1", "docker-run.1"))
	cmd.Env = append(os.Environ(), "MANWIDTH=200", "MANPAGER=cat", "PAGER=cat")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("man -l docker-run.1: %v\n%s", err, out)
	}
	page := string(out)
	for _, want := range []string{"THE --init OPTION", "--init=systemd", "SIGRTMIN+3", "journalctl -D /var/log/journal/", "OPTIONS"} {
		if !strings.Contains(page, want) {
			t.Errorf("docker-run(1) lacks %q:\n%s", want, page)
		}
	}
	for _, p := range []string{"man1/docker.1", "man1/docker-create.1", "man1/docker-container-run.1", "man8/dockerd.8"} {
		if !exists(filepath.Join(dir, p)) {
			t.Errorf("no %s", p)
		}
	}
}

// TestPackagingCompletion sources the generated bash completion and
// completes `docker run --init=` through it (which calls docker
// __complete, so bin/ goes first on PATH).
func TestPackagingCompletion(t *testing.T) {
	dir := t.TempDir()
	genDocs(t, "-completion", dir)
	script := filepath.Join(dir, "bash", "docker")
	for _, f := range []string{script, filepath.Join(dir, "fish", "docker.fish"), filepath.Join(dir, "zsh", "_docker")} {
		if !exists(f) {
			t.Errorf("no %s", f)
		}
	}
	out, err := exec.Command("bash", "-c", "source "+script+"; complete -p docker").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "docker") {
		t.Fatalf("complete -p docker: %v\n%s", err, out)
	}

	if out := shared.MustCLI(t, "__complete", "run", "--init="); !strings.HasPrefix(out, "systemd") {
		t.Errorf("docker __complete run --init= offers %q, want systemd first", out)
	}
	// Container names come from the daemon.
	id := remember(shared.MustCLI(t, "create", "--name", "pkg-complete-me", "busybox", "true"))
	defer shared.CLI("rm", "-f", id)
	if out := shared.MustCLI(t, "__complete", "stop", "pkg-complete"); !strings.Contains(out, "pkg-complete-me") {
		t.Errorf("docker __complete stop pkg-complete: %q", out)
	}
	if out := shared.MustCLI(t, "__complete", "run", "busy"); !strings.Contains(out, "busybox:latest") {
		t.Errorf("docker __complete run busy: %q", out)
	}

	// The shell function itself, as bash calls it on TAB after "--init="
	// (bash splits the word at "="). It needs bash-completion's helpers.
	const helpers = "/usr/share/bash-completion/bash_completion"
	testenv.Require(t, exists(helpers), helpers+" (apt-get install bash-completion)")
	drive := `source ` + helpers + `; source ` + script + `
COMP_LINE="docker run --init="; COMP_POINT=${#COMP_LINE}
COMP_WORDS=(docker run --init =); COMP_CWORD=3
__start_docker 2>/dev/null; printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", "-c", drive)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(ourCLI)+":"+os.Getenv("PATH"), "DOCKER_HOST="+shared.Host())
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains("\n"+string(got), "\nsystemd\n") {
		t.Errorf("bash completion after --init=: %v\n%s", err, got)
	}
}

// genDocs runs hack/gen-docs with flag set to dir.
func genDocs(t *testing.T, flag, dir string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	cmd := exec.Command(goBin, "run", "-tags", "seccomp", "./hack/gen-docs", "-src", "man/src", flag, dir)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-docs %s: %v\n%s", flag, err, out)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
