package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The helper is checked from a child test binary, so that the skip or
// failure it causes is observed rather than suffered.
func TestRequire(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Require(t, true, "nothing")
		Require(t, false, "a unicorn (apt-get install unicorn)")
		t.Error("Require returned for a missing component")
		return
	}
	for _, tc := range []struct {
		requireAll string
		wantErr    bool
		want       string
	}{
		{"", false, "--- SKIP: TestRequire"},
		{"0", false, "--- SKIP: TestRequire"},
		{"1", true, "--- FAIL: TestRequire"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequire$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", RequireAllVar+"="+tc.requireAll)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.wantErr || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "needs a unicorn (apt-get install unicorn)") {
			t.Errorf("%s=%q: err %v, output:\n%s", RequireAllVar, tc.requireAll, err, out)
		}
	}
}

func TestHaveExecutable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !HaveExecutable(self) {
		t.Errorf("HaveExecutable(%q) = false", self)
	}
	if HaveExecutable("/nonexistent/prog") || HaveExecutable("sdengine-no-such-program") || HaveExecutable(os.TempDir()) {
		t.Error("HaveExecutable found a program that does not exist")
	}
}
