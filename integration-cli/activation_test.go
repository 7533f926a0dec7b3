//go:build integration

package integrationcli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdengine/engine/internal/testenv"
)

// TestSocketActivationTwoSockets starts dockerd the way systemd does for a
// socket unit with two ListenStream= lines (LISTEN_FDS=2, LISTEN_PID of
// dockerd itself), through systemd-socket-activate, with `-H fd:// -H fd://`:
// both sockets answer /_ping and the stock CLI, each served once.
func TestSocketActivationTwoSockets(t *testing.T) {
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Fatal("systemd-socket-activate not found (hack/deps installs systemd)")
	}
	d := NewDaemon(t)
	a, b := filepath.Join(d.Dir, "a.sock"), filepath.Join(d.Dir, "b.sock")
	// Drop NewDaemon's own -H unix://: systemd-socket-activate owns the sockets.
	if d.Args[0] != "-H" || !strings.HasPrefix(d.Args[1], "unix://") {
		t.Fatalf("NewDaemon's arguments changed: %q", d.Args)
	}
	d.Args = append([]string{"-H", "fd://", "-H", "fd://"}, d.Args[2:]...)
	d.Wrapper = []string{activate, "-l", a, "-l", b}
	d.Sock = a
	// The first connection (Start's `docker version` on a.sock) makes
	// systemd-socket-activate exec dockerd with both sockets.
	d.Start(t)
	defer d.Cleanup(t)

	for _, sock := range []string{a, b} {
		if out, err := testenv.PingUnix(sock); err != nil || out != "OK" {
			t.Errorf("/_ping on %s: %q %v\n%s", sock, out, err, d.Log())
		}
		r := run(stockCLI, "unix://"+sock, "", "info", "--format", "{{.Swarm.LocalNodeState}}")
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "inactive" {
			t.Errorf("stock docker info on %s: %s", sock, r)
		}
	}
	if n := strings.Count(d.Log(), `msg="API listening"`); n != 2 {
		t.Errorf("dockerd listens %d times, want once on each of the two sockets:\n%s", n, d.Log())
	}
}
