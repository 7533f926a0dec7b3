// Package testenv decides what a test does when a real component it needs
// (root, a binary, a package, a service) is missing on the machine.
//
// Under plain `go test` such a test skips, naming what is missing, so a
// developer without, say, systemd-machined can still run the rest. CI
// (hack/test) sets SDENGINE_REQUIRE_ALL=1: there hack/deps has installed
// everything, so a missing component is a broken environment and the test
// fails instead of passing vacuously.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireAllVar is the environment variable that turns skips into failures.
const RequireAllVar = "SDENGINE_REQUIRE_ALL"

// RequireAll reports whether SDENGINE_REQUIRE_ALL=1 is set.
func RequireAll() bool { return os.Getenv(RequireAllVar) == "1" }

// Require does nothing when ok is true. Otherwise it ends t: a skip under
// plain go test, a failure when SDENGINE_REQUIRE_ALL=1. what names the
// missing component and how to get it, e.g.
// "/lib/systemd/systemd-machined (apt-get install systemd-container)".
func Require(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if RequireAll() {
		t.Fatalf("this test needs %s; %s=1 forbids skipping it (hack/deps installs the test dependencies)", what, RequireAllVar)
	}
	t.Skipf("needs %s (with %s=1 this is a failure)", what, RequireAllVar)
}

// RequireRoot requires an effective user ID of 0.
func RequireRoot(t testing.TB) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "root")
}

// RequireExecutable requires a program: an absolute path that must exist,
// or a name looked up in PATH. pkg is the Debian package that provides it.
func RequireExecutable(t testing.TB, prog, pkg string) {
	t.Helper()
	Require(t, HaveExecutable(prog), prog+" (apt-get install "+pkg+")")
}

// HaveExecutable reports whether prog (an absolute path, or a name looked
// up in PATH) exists and is executable.
func HaveExecutable(prog string) bool {
	if strings.Contains(prog, "/") {
		fi, err := os.Stat(prog)
		return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
	}
	_, err := exec.LookPath(prog)
	return err == nil
}
