package signal

import (
	"syscall"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestParse(t *testing.T) {
	cases := map[string]syscall.Signal{
		"TERM": 15, "SIGTERM": 15, "sigterm": 15, "Term": 15, "15": 15,
		"KILL": 9, "SIGHUP": 1, "IOT": 6, "CLD": 17, "POLL": 29, "WINCH": 28,
		"RTMIN": 34, "SIGRTMIN": 34, "RTMIN+1": 35, "RTMIN+3": 37, "SIGRTMIN+3": 37,
		"rtmin+3": 37, "RTMAX": 64, "RTMAX-2": 62, "SIGRTMAX-30": 34, "RTMIN+30": 64,
		"64": 64, "1": 1,
	}
	for in, want := range cases {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, in := range []string{"", "0", "65", "-1", "FOO", "SIG", "RTMIN-1", "RTMAX+1", "RTMIN+31", "RTMIN+", "RTMIN+-1", "SIGSIGTERM"} {
		_, err := Parse(in)
		if !errdefs.IsInvalidParameter(err) {
			t.Errorf("Parse(%q): got %v, want InvalidParameter", in, err)
			continue
		}
		if want := "Invalid signal: " + in; err.Error() != want {
			t.Errorf("Parse(%q): message %q", in, err)
		}
	}
}

func TestName(t *testing.T) {
	cases := map[syscall.Signal]string{
		15: "SIGTERM", 6: "SIGABRT", 17: "SIGCHLD", 29: "SIGIO",
		34: "SIGRTMIN", 35: "SIGRTMIN+1", 37: "SIGRTMIN+3", 49: "SIGRTMIN+15",
		50: "SIGRTMAX-14", 62: "SIGRTMAX-2", 64: "SIGRTMAX", 32: "32",
	}
	for sig, want := range cases {
		if got := Name(sig); got != want {
			t.Errorf("Name(%d) = %q, want %q", sig, got, want)
		}
	}
}

// Every valid number survives Name -> Parse.
func TestRoundTrip(t *testing.T) {
	for n := 1; n <= 64; n++ {
		sig := syscall.Signal(n)
		got, err := Parse(Name(sig))
		if err != nil || got != sig {
			t.Errorf("%d -> %q -> %d, %v", n, Name(sig), got, err)
		}
	}
}
