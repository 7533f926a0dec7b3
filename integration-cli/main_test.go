//go:build integration

package integrationcli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// busyboxTar is the rootfs tar built from Debian's busybox-static.
var busyboxTar string

// shared is the daemon most tests use; tests that restart or kill a daemon
// start their own.
var shared *Daemon

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Println("integration tests need root")
		os.Exit(1)
	}
	out, err := exec.Command(repoRoot + "/hack/images/busybox.sh").Output()
	if err != nil {
		fmt.Println("build busybox image:", err)
		os.Exit(1)
	}
	busyboxTar = strings.TrimSpace(string(out))
	t := &testing.T{}
	shared = NewDaemon(t)
	shared.Start(t)
	loadBusybox(t, shared)
	code := m.Run()
	check := &recorder{}
	shared.Cleanup(check)
	if len(check.errs) > 0 {
		fmt.Println("leftovers after the suite:")
		for _, e := range check.errs {
			fmt.Println(" ", e)
		}
		fmt.Println(shared.Log())
		code = 1
	}
	os.Exit(code)
}

// loadBusybox imports the busybox rootfs as busybox:latest.
func loadBusybox(t testing.TB, d *Daemon) {
	r := d.CLI("import", "-c", `CMD ["sh"]`, busyboxTar, "busybox")
	if r.Code != 0 {
		fmt.Println("import busybox:", r)
		os.Exit(1)
	}
}

// recorder collects failures outside a test (TestMain's final check).
type recorder struct {
	testing.T
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper()      {}
func (r *recorder) Failed() bool { return len(r.errs) > 0 }
