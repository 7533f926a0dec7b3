package shim

import (
	"errors"
	"testing"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/pkg/errdefs"
)

// A failed start is classified once, in the shim, and its exit code and
// class cross the control socket as fields.
func TestStartErrorClassifiedOnce(t *testing.T) {
	for _, tc := range []struct {
		msg     string
		code    int
		invalid bool
	}{
		{`exec: "nope": executable file not found in $PATH`, 127, true},
		{"exec /bin/x: no such file or directory", 127, true},
		{"exec /etc/passwd: permission denied", 126, true},
		{"exec /bin/x: exec format error", 126, true},
		{"chdir to cwd (\"/nope\") set in config.json failed: not a directory", 126, true},
		{"unable to find user nobody2: no matching entries in passwd file", 125, true},
		{"creating cgroup: device or resource busy", 125, false},
	} {
		err := classifyStartError(errors.New(tc.msg))
		resp := shimproto.ErrResponse(err)
		back := resp.Err()
		for _, e := range []error{err, back} {
			if got := execdriver.StartExitCode(e); got != tc.code {
				t.Errorf("%q: code %d, want %d", tc.msg, got, tc.code)
			}
			if errdefs.IsInvalidParameter(e) != tc.invalid {
				t.Errorf("%q: invalid parameter %v, want %v", tc.msg, errdefs.IsInvalidParameter(e), tc.invalid)
			}
			if e.Error() != tc.msg {
				t.Errorf("message %q, want %q", e.Error(), tc.msg)
			}
		}
	}
	if got := execdriver.StartExitCode(errors.New("mount container rootfs: no space left")); got != 125 {
		t.Errorf("a failure before the start: %d, want 125", got)
	}
}
