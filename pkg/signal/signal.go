// Package signal converts between signal names, as users write them in
// `docker kill -s` or STOPSIGNAL, and Linux signal numbers.
package signal

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Real-time signal range as seen by programs linked against glibc: the
// kernel's first two (32, 33) are taken by glibc for its own use, so
// SIGRTMIN is 34 for every process a container is likely to run.
const (
	RTMin = 34
	RTMax = 64
)

// names is the one table of classic signals; the first name listed for a
// number is the canonical one that Name returns.
var names = []struct {
	name string
	sig  syscall.Signal
}{
	{"HUP", syscall.SIGHUP},
	{"INT", syscall.SIGINT},
	{"QUIT", syscall.SIGQUIT},
	{"ILL", syscall.SIGILL},
	{"TRAP", syscall.SIGTRAP},
	{"ABRT", syscall.SIGABRT},
	{"IOT", syscall.SIGIOT},
	{"BUS", syscall.SIGBUS},
	{"FPE", syscall.SIGFPE},
	{"KILL", syscall.SIGKILL},
	{"USR1", syscall.SIGUSR1},
	{"SEGV", syscall.SIGSEGV},
	{"USR2", syscall.SIGUSR2},
	{"PIPE", syscall.SIGPIPE},
	{"ALRM", syscall.SIGALRM},
	{"TERM", syscall.SIGTERM},
	{"STKFLT", syscall.SIGSTKFLT},
	{"CHLD", syscall.SIGCHLD},
	{"CLD", syscall.SIGCLD},
	{"CONT", syscall.SIGCONT},
	{"STOP", syscall.SIGSTOP},
	{"TSTP", syscall.SIGTSTP},
	{"TTIN", syscall.SIGTTIN},
	{"TTOU", syscall.SIGTTOU},
	{"URG", syscall.SIGURG},
	{"XCPU", syscall.SIGXCPU},
	{"XFSZ", syscall.SIGXFSZ},
	{"VTALRM", syscall.SIGVTALRM},
	{"PROF", syscall.SIGPROF},
	{"WINCH", syscall.SIGWINCH},
	{"IO", syscall.SIGIO},
	{"POLL", syscall.SIGPOLL},
	{"PWR", syscall.SIGPWR},
	{"SYS", syscall.SIGSYS},
}

// Parse accepts a name with or without the SIG prefix in any case ("TERM",
// "sigterm"), a number ("15"), or a real-time name ("RTMIN", "RTMIN+3",
// "RTMAX-2").
func Parse(s string) (syscall.Signal, error) {
	invalid := errdefs.InvalidParameter(fmt.Errorf("Invalid signal: %s", s))
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > RTMax {
			return 0, invalid
		}
		return syscall.Signal(n), nil
	}
	u := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "SIG")
	for _, e := range names {
		if e.name == u {
			return e.sig, nil
		}
	}
	if sig, ok := parseRT(u); ok {
		return sig, nil
	}
	return 0, invalid
}

// parseRT handles RTMIN, RTMIN+n, RTMAX and RTMAX-n within [RTMin, RTMax].
func parseRT(u string) (syscall.Signal, bool) {
	var base, sign int
	var rest string
	switch {
	case strings.HasPrefix(u, "RTMIN"):
		base, sign, rest = RTMin, 1, u[len("RTMIN"):]
	case strings.HasPrefix(u, "RTMAX"):
		base, sign, rest = RTMax, -1, u[len("RTMAX"):]
	default:
		return 0, false
	}
	if rest == "" {
		return syscall.Signal(base), true
	}
	op := "+"
	if sign < 0 {
		op = "-"
	}
	digits, ok := strings.CutPrefix(rest, op)
	if !ok || digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n > RTMax-RTMin {
		return 0, false
	}
	return syscall.Signal(base + sign*n), true
}

// Name returns the canonical name ("SIGTERM"). Real-time signals are named
// like kill -l does: SIGRTMIN+n for the lower half, SIGRTMAX-n above it.
// A number without a name (32, 33) comes back as its decimal form, which
// Parse accepts.
func Name(sig syscall.Signal) string {
	for _, e := range names {
		if e.sig == sig {
			return "SIG" + e.name
		}
	}
	n := int(sig)
	switch {
	case n == RTMin:
		return "SIGRTMIN"
	case n == RTMax:
		return "SIGRTMAX"
	case n > RTMin && n <= (RTMin+RTMax)/2:
		return "SIGRTMIN+" + strconv.Itoa(n-RTMin)
	case n > (RTMin+RTMax)/2 && n < RTMax:
		return "SIGRTMAX-" + strconv.Itoa(RTMax-n)
	}
	return strconv.Itoa(n)
}
