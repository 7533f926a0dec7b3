package native

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/seccomp"

	"github.com/sdengine/engine/daemon/execdriver/shim"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/internal/testenv"
)

// The test binary doubles as the shim and as runc init, exactly like the
// daemon binary does.
var (
	testRootfs       string
	testCgroupParent string
	testBase         string
	// missing names what keeps the tests from running here ("" when
	// nothing does); needDriver then skips them, or fails them under
	// SDENGINE_REQUIRE_ALL=1. Returning from TestMain without m.Run, as
	// this package once did, reports "ok" for tests that never ran.
	missing string
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == shimproto.ShimCommand {
		shim.Main(os.Args[2:])
		return
	}
	if v := os.Getenv("NATIVE_TEST_DAEMON"); v != "" {
		fakeDaemon(v)
		return
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	switch {
	case os.Geteuid() != 0:
		missing = "root"
	case !seccomp.Enabled:
		// Every container gets the default seccomp profile, which needs
		// libcontainer built with the seccomp tag (as `make` does).
		missing = "libcontainer's seccomp support: build with the seccomp tag (`make unit`, `go test -tags seccomp`)"
	}
	if missing != "" {
		return m.Run() // every test stops in needDriver
	}
	var err error
	testBase, err = os.MkdirTemp("", "nd")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(testBase)
	testRootfs = filepath.Join(testBase, "rootfs")
	if err := buildBusyboxRootfs(testRootfs); err != nil {
		fmt.Println("building rootfs:", err)
		return 1
	}
	testCgroupParent = "/docker-test-" + strconv.Itoa(os.Getpid())
	code := m.Run()
	if err := checkClean(); err != nil {
		fmt.Println("LEFTOVERS:", err)
		code = 1
	}
	return code
}

// needDriver ends t unless the driver can run containers here.
func needDriver(t *testing.T) {
	t.Helper()
	testenv.Require(t, missing == "", missing)
}

// buildBusyboxRootfs makes a minimal image: static busybox, its applets
// as symlinks, and passwd/group files.
func buildBusyboxRootfs(root string) error {
	for _, d := range []string{"bin", "etc", "tmp", "proc", "sys", "dev", "root", "home/user"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	b, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), b, 0o755); err != nil {
		return err
	}
	out, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return err
	}
	for _, name := range strings.Fields(string(out)) {
		if name == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(root, "bin", name)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n",
		"etc/group":  "root:x:0:\nuser:x:1000:\nextra:x:2000:user\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// checkClean verifies that the tests left no cgroup, shim or mount
// behind, then removes the (empty) cgroup parents.
func checkClean() error {
	var problems []string
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + testCgroupParent)
	if _, err := os.Stat("/sys/fs/cgroup" + testCgroupParent); err == nil {
		dirs = append(dirs, "/sys/fs/cgroup"+testCgroupParent) // cgroup v2
	}
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() {
				problems = append(problems, "cgroup "+filepath.Join(d, e.Name()))
			}
		}
		_ = os.Remove(d)
	}
	// A shim ends on its own once its last container is released; that
	// exit is asynchronous and, under -race, takes a moment. Give the
	// shims that long, not the 30 s idle timeout that would hide a shim
	// no container ever reached.
	deadline := time.Now().Add(shimExitGrace)
	shims := testShims()
	for len(shims) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		shims = testShims()
	}
	for _, p := range shims {
		problems = append(problems, "shim process "+p)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.Contains(sc.Text(), testBase) {
				problems = append(problems, "mount "+sc.Text())
			}
		}
		f.Close()
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// shimExitGrace bounds how long checkClean waits for released shims to
// exit; well under the shim's idle timeout.
const shimExitGrace = 10 * time.Second

// testShims lists the /proc cmdline paths of shims this test run started.
func testShims() []string {
	var shims []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), shimproto.ShimCommand+"\x00"+testBase) {
			shims = append(shims, p)
		}
	}
	return shims
}
