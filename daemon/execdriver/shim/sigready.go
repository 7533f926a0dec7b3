package shim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// settleWindow is how long after its start a container's program may take
// to install its signal handlers and still receive a signal sent before.
const settleWindow = 2 * time.Second

// The init of a PID namespace drops every signal it neither catches, blocks
// nor ignores (SIGKILL and SIGSTOP aside). A `docker stop` or `docker kill`
// that arrives a few milliseconds after `docker run -d` reaches a shell
// that has not yet run its `trap ... TERM`: the kernel drops the signal
// and the stop ends in SIGKILL after its timeout, where a slower engine
// would have let the trap run. Docker's users write exactly this (and
// moby's own tests do), so a signal that was dropped that way in the
// first moments of the container is delivered again once the program
// catches it.

// sigState is the signal masks of /proc/PID/status.
type sigState struct{ caught, blocked, ignored uint64 }

func readSigState(pid int) (sigState, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return sigState{}, err
	}
	defer f.Close()
	var st sigState
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch key {
		case "SigCgt":
			dst = &st.caught
		case "SigBlk":
			dst = &st.blocked
		case "SigIgn":
			dst = &st.ignored
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(strings.TrimSpace(val), 16, 64); err != nil {
			return sigState{}, fmt.Errorf("parsing %s of %d: %w", key, pid, err)
		}
	}
	return st, sc.Err()
}

func sigBit(sig syscall.Signal) uint64 { return 1 << (uint(sig) - 1) }

// dropped reports whether sig would be dropped by an init in this state.
func (st sigState) dropped(sig syscall.Signal) bool {
	b := sigBit(sig)
	return (st.caught|st.blocked|st.ignored)&b == 0
}

// signalWhenReady sends sig with send. If the container's program is still
// in its first moments (before deadline) and did not catch, block or
// ignore sig both just before and just after it was sent, the signal was
// dropped: wait (until deadline) for the program to catch it and send it
// once more. It returns the first send's error at once; the retry runs in
// the background.
func signalWhenReady(pid int, sig syscall.Signal, deadline time.Time, send func(syscall.Signal) error) error {
	if sig == syscall.SIGKILL || sig == syscall.SIGSTOP || sig == 0 || time.Now().After(deadline) {
		return send(sig)
	}
	before, errBefore := readSigState(pid)
	if err := send(sig); err != nil {
		return err
	}
	after, errAfter := readSigState(pid)
	if errBefore != nil || errAfter != nil || !before.dropped(sig) || !after.dropped(sig) {
		return nil // delivered, or the process is gone
	}
	go func() {
		for delay := time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, 20*time.Millisecond) {
			time.Sleep(delay)
			st, err := readSigState(pid)
			if err != nil {
				return // exited
			}
			if st.caught&sigBit(sig) != 0 {
				_ = send(sig)
				return
			}
			if st.ignored&sigBit(sig) != 0 {
				return // the program chose to ignore it
			}
		}
	}()
	return nil
}
