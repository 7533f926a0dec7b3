//go:build integration

package integrationcli

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildFd3Server builds testdata/fd3server static, for any image.
func buildFd3Server(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	out := filepath.Join(t.TempDir(), "fd3server")
	cmd := exec.Command(goBin, "build", "-o", out, "./testdata/fd3server")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building fd3server: %v\n%s", err, b)
	}
	return out
}

// socketActivate starts systemd-socket-activate with args, running our CLI
// against d with cliArgs on the first connection.
func socketActivate(t *testing.T, d *Daemon, args []string, cliArgs ...string) *exec.Cmd {
	t.Helper()
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Fatal("systemd-socket-activate not found (hack/deps installs systemd)")
	}
	args = append(args, "-E", "DOCKER_HOST="+d.Host(), ourCLI)
	cmd := exec.Command(activate, append(args, cliArgs...)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("systemd-socket-activate and the CLI:\n%s", log.String())
		}
	})
	return cmd
}

// dialRetry connects once the socket is there.
func dialRetry(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial(network, addr)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readLine(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the container's answer: %v (got %q)", err, line)
	}
	return strings.TrimSpace(line)
}

// TestRunSocketActivatedListen is a socket unit in miniature:
// systemd-socket-activate holds a listening TCP socket and runs `docker
// run` on the first connection; the CLI passes the socket to the daemon,
// the container's process gets it as fd 3 with LISTEN_FDS, LISTEN_PID (1,
// itself in its pid namespace) and LISTEN_FDNAMES, accepts the connection
// that started it and answers it.
func TestRunSocketActivatedListen(t *testing.T) {
	server := buildFd3Server(t)
	addr := freePort(t)
	socketActivate(t, shared, []string{"-l", addr, "--fdname=web"},
		"run", "--rm", "--network", "none", "-v", server+":/fd3server:ro", "busybox", "/fd3server")
	c := dialRetry(t, "tcp", addr)
	defer c.Close()
	got := readLine(t, c)
	if want := "hello LISTEN_FDS=1 LISTEN_PID=1 LISTEN_FDNAMES=web pid=1"; got != want {
		t.Fatalf("the container answered %q, want %q", got, want)
	}
}

// TestRunSocketActivatedAccept is Accept=yes: each connection runs the
// CLI with the connection as fd 3; a busybox shell answers on it.
func TestRunSocketActivatedAccept(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "accept.sock")
	socketActivate(t, shared, []string{"--accept", "-l", sock},
		"run", "--rm", "busybox", "sh", "-c",
		`echo "fds=$LISTEN_FDS pid=$LISTEN_PID open=$(ls /proc/self/fd | wc -l)" >&3`)
	c := dialRetry(t, "unix", sock)
	defer c.Close()
	// open: 0-3, and the one ls holds on /proc/self/fd.
	if got, want := readLine(t, c), "fds=1 pid=1 open=5"; got != want {
		t.Fatalf("the container answered %q, want %q", got, want)
	}
}

// cliWithFiles runs our CLI against d with files as its fds 3, 4, ...
func cliWithFiles(d *Daemon, files []*os.File, env []string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ourCLI, args...)
	cmd.Env = append(append(os.Environ(), "DOCKER_HOST="+d.Host()), env...)
	cmd.ExtraFiles = files
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errb.WriteString(err.Error())
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

func containerCount(t *testing.T) int {
	return len(strings.Fields(shared.MustCLI(t, "ps", "-aq")))
}

// TestRunPreserveFds is Podman's --preserve-fds: the CLI's fds 3 .. 3+N-1
// are the container's, no LISTEN_* variables, nothing else of the host's.
func TestRunPreserveFds(t *testing.T) {
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	res := cliWithFiles(shared, []*os.File{w1, w2}, nil, "run", "--rm", "--preserve-fds", "2", "busybox", "sh", "-c",
		`echo one >&3; echo two >&4; echo "[$LISTEN_FDS]"; ls /proc/self/fd | sort -n | tr '\n' ' '`)
	w1.Close()
	w2.Close()
	if res.Code != 0 || res.Stdout != "[]\n0 1 2 3 4 5 " {
		t.Fatalf("run --preserve-fds 2: %s", res)
	}
	for _, c := range []struct {
		r    *os.File
		want string
	}{{r1, "one\n"}, {r2, "two\n"}} {
		// Every writer is gone (CLI, daemon, shim, the container): the
		// read ends at EOF.
		b := make([]byte, 64)
		var got []byte
		_ = c.r.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			n, err := c.r.Read(b)
			got = append(got, b[:n]...)
			if err != nil {
				break
			}
		}
		if string(got) != c.want {
			t.Errorf("pipe: %q, want %q then EOF", got, c.want)
		}
	}
}

// TestPreserveFdsRefused: more than the CLI holds, a directory, and a
// daemon over TCP are errors, before anything is created or started.
func TestPreserveFdsRefused(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before := containerCount(t)

	res := cliWithFiles(shared, []*os.File{w}, nil, "run", "--rm", "--preserve-fds", "2", "busybox", "true")
	if res.Code != 125 || !strings.Contains(res.Stderr, "--preserve-fds 2: only 1 descriptors after stdio are open") {
		t.Errorf("--preserve-fds beyond what the CLI holds: %s", res)
	}
	res = cliWithFiles(shared, []*os.File{w}, []string{"DOCKER_HOST=tcp://127.0.0.1:9"}, "run", "--rm", "--preserve-fds", "1", "busybox", "true")
	if res.Code != 125 || !strings.Contains(res.Stderr, "can only be passed over the daemon's unix socket") {
		t.Errorf("--preserve-fds over TCP: %s", res)
	}
	if n := containerCount(t); n != before {
		t.Errorf("%d containers after refused runs, %d before", n, before)
	}

	dir, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	name := "fdpass-dir"
	res = cliWithFiles(shared, []*os.File{dir}, nil, "run", "--name", name, "--preserve-fds", "1", "busybox", "true")
	defer shared.CLI("rm", "-f", name)
	if res.Code == 0 || !strings.Contains(res.Stderr, "descriptor 3 is a directory, which cannot be passed into a container") {
		t.Errorf("a directory passed in: %s", res)
	}
	if st := shared.MustCLI(t, "inspect", "--format", "{{.State.Status}}", name); st != "created" {
		t.Errorf("the container of a refused start is %s, want created", st)
	}
	// The container starts without descriptors as usual afterwards.
	if res := shared.CLI("start", "-a", name); res.Code != 0 {
		t.Errorf("plain start after the refusal: %s", res)
	}
}

// TestStartPreserveFds: docker start passes descriptors too.
func TestStartPreserveFds(t *testing.T) {
	id := shared.MustCLI(t, "create", "busybox", "sh", "-c", `echo via-start >&3`)
	defer shared.CLI("rm", "-f", id)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res := cliWithFiles(shared, []*os.File{w}, nil, "start", "-a", "--preserve-fds", "1", id)
	w.Close()
	if res.Code != 0 {
		t.Fatalf("start --preserve-fds: %s", res)
	}
	b := make([]byte, 64)
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := r.Read(b)
	if string(b[:n]) != "via-start\n" {
		t.Fatalf("read %q from the container", b[:n])
	}
}

// TestSocketUnitNestedHost: a real .socket unit in a booted systemd host,
// whose service runs our CLI's `docker run` against the engine in that
// host. The first connection starts the service, the CLI passes the
// socket on, and the container accepts the connection and answers it.
func TestSocketUnitNestedHost(t *testing.T) {
	h := startNestedHost(t)
	server := buildFd3Server(t)
	copyFile(t, server, filepath.Join(h.Dir, "fd3server"))
	if err := os.Chmod(filepath.Join(h.Dir, "fd3server"), 0o755); err != nil {
		t.Fatal(err)
	}
	units := `cat >/run/systemd/system/itsa.socket <<'UNIT'
[Socket]
ListenStream=127.0.0.1:8099
FileDescriptorName=web
UNIT
cat >/run/systemd/system/itsa.service <<'UNIT'
[Service]
ExecStart=/sdengine/bin/docker -H unix:///run/itd.sock run --rm --network none -v /itm/fd3server:/fd3server:ro busybox /fd3server
UNIT
systemctl daemon-reload && systemctl start itsa.socket`
	h.MustIn("sh", "-c", units)
	if st := strings.TrimSpace(h.In("systemctl", "is-active", "itsa.service").Stdout); st != "inactive" {
		t.Errorf("itsa.service before the first connection: %s", st)
	}
	r := h.In("timeout", "60", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8099 && cat <&3")
	if want := "hello LISTEN_FDS=1 LISTEN_PID=1 LISTEN_FDNAMES=web pid=1\n"; r.Code != 0 || r.Stdout != want {
		t.Fatalf("first connection: %s, want %q\n%s", r, want, h.In("journalctl", "-u", "itsa.service", "-u", "it-dockerd", "--no-pager").Stdout)
	}
	// The container served its one connection and exited; so did the
	// CLI, and the service with it, cleanly.
	for i := 0; ; i++ {
		st := strings.TrimSpace(h.In("systemctl", "is-active", "itsa.service").Stdout)
		if st == "inactive" {
			break
		}
		if st == "failed" || i > 200 {
			t.Fatalf("itsa.service after the container exited: %s\n%s", st, h.In("journalctl", "-u", "itsa.service", "--no-pager").Stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.MustIn("systemctl", "stop", "itsa.socket")
}
