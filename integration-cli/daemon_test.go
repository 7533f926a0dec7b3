//go:build integration

package integrationcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// repoRoot is where bin/ and hack/ are.
var repoRoot = func() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}()

var (
	ourCLI   = filepath.Join(repoRoot, "bin", "docker")
	dockerd  = filepath.Join(repoRoot, "bin", "dockerd")
	stockCLI = "/usr/local/bin/docker"
)

// Daemon is a private dockerd started by a test.
type Daemon struct {
	Dir      string // everything lives under here
	Sock     string
	Root     string
	ExecRoot string
	Args     []string
	// Wrapper, when set, runs dockerd: Wrapper[0] Wrapper[1:]... dockerd Args...
	// (e.g. systemd-socket-activate, which execs dockerd in its own PID).
	Wrapper []string
	// Env is added to dockerd's environment (e.g. an armed crash point).
	Env     []string
	cmd     *exec.Cmd
	logFile *os.File
}

// NewDaemon prepares (not starts) a daemon under a fresh short directory:
// unix socket paths must stay under 108 bytes.
func NewDaemon(t testing.TB, extraArgs ...string) *Daemon {
	dir, err := os.MkdirTemp("/tmp", "it-")
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{
		Dir:      dir,
		Sock:     filepath.Join(dir, "d.sock"),
		Root:     filepath.Join(dir, "root"),
		ExecRoot: filepath.Join(dir, "run"),
	}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Args = []string{
		"-H", "unix://" + d.Sock, "--data-root", d.Root, "--exec-root", d.ExecRoot,
		"--pidfile", filepath.Join(dir, "d.pid"), "--config-file", filepath.Join(dir, "daemon.json"), "-D",
	}
	// No default bridge unless the test asks for one (NewBridgeDaemon):
	// docker0 would clash with Docker's and with other tests' daemons.
	if !hasBridgeArg(extraArgs) {
		d.Args = append(d.Args, "--bridge=none")
	}
	d.Args = append(d.Args, extraArgs...)
	return d
}

// Host is the DOCKER_HOST value for this daemon.
func (d *Daemon) Host() string { return "unix://" + d.Sock }

// Start runs dockerd and waits until it answers /_ping.
func (d *Daemon) Start(t testing.TB) {
	t.Helper()
	lf, err := os.OpenFile(filepath.Join(d.Dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	d.logFile = lf
	if len(d.Wrapper) > 0 {
		d.cmd = exec.Command(d.Wrapper[0], append(append(d.Wrapper[1:len(d.Wrapper):len(d.Wrapper)], dockerd), d.Args...)...)
	} else {
		d.cmd = exec.Command(dockerd, d.Args...)
	}
	d.cmd.Stdout, d.cmd.Stderr = lf, lf
	if len(d.Env) > 0 {
		d.cmd.Env = append(os.Environ(), d.Env...)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	go d.cmd.Wait() //nolint:errcheck // reaped here; exit seen through ping
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if out, err := exec.Command(ourCLI, "-H", d.Host(), "version", "--format", "{{.Server.Version}}").CombinedOutput(); err == nil && len(bytes.TrimSpace(out)) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("dockerd did not come up; log:\n%s", d.Log())
}

// Log returns the daemon's log so far.
func (d *Daemon) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "dockerd.log"))
	return string(b)
}

// Pid is the daemon's process ID.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// Stop ends the daemon with SIGTERM (it stops its containers) and waits.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	d.signal(t, syscall.SIGTERM)
}

// Kill ends the daemon with SIGKILL, leaving its containers to their shims.
func (d *Daemon) Kill(t testing.TB) {
	t.Helper()
	d.signal(t, syscall.SIGKILL)
}

func (d *Daemon) signal(t testing.TB, sig syscall.Signal) {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	pid := d.cmd.Process.Pid
	_ = d.cmd.Process.Signal(sig)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err != nil {
			break
		}
		// A zombie still answers kill 0; its state tells.
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(st), ") Z ") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d.logFile != nil {
		d.logFile.Close()
	}
	d.cmd = nil
}

// Cleanup removes every container, stops the daemon, and removes its
// directory, checking nothing of it is left on the machine.
func (d *Daemon) Cleanup(t testing.TB) {
	t.Helper()
	if d.cmd != nil {
		if ids := strings.Fields(d.MustCLI(t, "ps", "-aq")); len(ids) > 0 {
			d.CLI(append([]string{"rm", "-f"}, ids...)...)
		}
		d.Stop(t)
	}
	checkNothingLeft(t, d)
	if !t.Failed() {
		os.RemoveAll(d.Dir)
	}
}

// Client is a Go SDK client for this daemon.
func (d *Daemon) Client(t testing.TB) *client.Client {
	c, err := client.NewClientWithOpts(client.WithHost(d.Host()), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Result is what a CLI run gave.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
}

func run(bin, host string, stdin string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+host, "DOCKER_CLI_HINTS=false")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
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

// CLI runs our docker CLI against the daemon.
func (d *Daemon) CLI(args ...string) Result { return run(ourCLI, d.Host(), "", args...) }

// CLIStdin runs our CLI with stdin.
func (d *Daemon) CLIStdin(stdin string, args ...string) Result {
	return run(ourCLI, d.Host(), stdin, args...)
}

// Stock runs the stock docker CLI against the daemon.
func (d *Daemon) Stock(args ...string) Result { return run(stockCLI, d.Host(), "", args...) }

// MustCLI runs our CLI and fails the test unless it exits 0.
func (d *Daemon) MustCLI(t testing.TB, args ...string) string {
	t.Helper()
	r := d.CLI(args...)
	if r.Code != 0 {
		t.Fatalf("docker %s: %s", strings.Join(args, " "), r)
	}
	return strings.TrimSpace(r.Stdout)
}

// clis runs f once with our CLI and once with the stock CLI.
func clis(t *testing.T, d *Daemon, f func(t *testing.T, cli func(args ...string) Result)) {
	t.Run("ours", func(t *testing.T) { f(t, d.CLI) })
	t.Run("stock", func(t *testing.T) { f(t, d.Stock) })
}

// ociSpec reads the OCI config.json the shared daemon wrote for a running
// container (what its hooks see).
func ociSpec(t *testing.T, id string) *specs.Spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shared.ExecRoot, "containers", id, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// hasBridgeArg reports whether the test's daemon flags choose a bridge.
func hasBridgeArg(args []string) bool {
	for _, a := range args {
		if a == "-b" || a == "--bridge" || strings.HasPrefix(a, "--bridge=") {
			return true
		}
	}
	return false
}
