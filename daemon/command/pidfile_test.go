package command

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
)

func TestProcState(t *testing.T) {
	for stat, want := range map[string]byte{
		"123 (dockerd) S 1 123":      'S',
		"123 (a) b) Z 1 123":         'Z',
		"123 (with space) R 1":       'R',
		"123 (x":                     0,
		"":                           0,
		"123 (dockerd) X 0 0 0 0 0 ": 'X',
	} {
		if got := procState([]byte(stat)); got != want {
			t.Errorf("procState(%q) = %q, want %q", stat, got, want)
		}
	}
}

// startAs runs prog under the name name (a copy in a temp dir) with args,
// and ends it when the test does.
func startAs(t *testing.T, prog, name string, args ...string) *exec.Cmd {
	t.Helper()
	src, err := exec.LookPath(prog)
	testenv.Require(t, err == nil, prog)
	dst := filepath.Join(t.TempDir(), name)
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
	cmd := exec.Command(dst, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func TestDaemonAlive(t *testing.T) {
	if daemonAlive(os.Getpid()) || daemonAlive(0) || daemonAlive(-1) {
		t.Error("own or invalid pid taken for a live daemon")
	}
	// A pid nobody has any more.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if daemonAlive(gone.Process.Pid) {
		t.Error("a finished process taken for a live daemon")
	}

	// A dockerd killed but not reaped yet: a zombie, in /proc until its
	// parent waits for it. The pidfile is stale.
	zombie := startAs(t, "tail", "dockerd", "-f", "/dev/null")
	pid := zombie.Process.Pid
	waitState(t, pid, 'S')
	if !daemonAlive(pid) {
		t.Fatal("a running dockerd not seen as alive")
	}
	zombie.Process.Kill()
	waitState(t, pid, 'Z')
	if daemonAlive(pid) {
		t.Error("a zombie taken for a live daemon")
	}
	path := filepath.Join(t.TempDir(), "d.pid")
	os.WriteFile(path, []byte(strconv.Itoa(pid)), 0o644)
	if err := writePidfile(path); err != nil {
		t.Errorf("pidfile of a zombie: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pidfile holds %q", b)
	}

	// The pid reused by another program, or by this binary in another
	// role (a shim, a container's init): stale too.
	other := startAs(t, "tail", "tail", "-f", "/dev/null")
	shim := startAs(t, "tail", "dockerd", "/dev/null", "-f")
	waitState(t, other.Process.Pid, 'S')
	waitState(t, shim.Process.Pid, 'S')
	if daemonAlive(other.Process.Pid) || daemonAlive(shim.Process.Pid) {
		t.Error("another program taken for a live daemon")
	}

	// A live daemon keeps the pidfile.
	live := startAs(t, "tail", "dockerd", "-f", "/dev/null")
	waitState(t, live.Process.Pid, 'S')
	os.WriteFile(path, []byte(strconv.Itoa(live.Process.Pid)), 0o644)
	if err := writePidfile(path); err == nil || !strings.Contains(err.Error(), "ensure docker is not running") {
		t.Errorf("pidfile of a live daemon: %v", err)
	}
}

// waitState waits until pid's /proc state is want (the exec done, or
// the kill taken).
func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	for range 500 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && procState(b) == want {
			if want != 'S' || isExecd(pid) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d never reached state %c", pid, want)
}

// isExecd tells whether pid runs its own program yet (not still the test
// binary forked for it).
func isExecd(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	self, _ := os.Executable()
	return err == nil && exe != self
}
