//go:build integration

package integrationcli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// Two suites may run on one machine at once (each with its own daemons on
// temporary sockets and roots); what they share is the host: interface
// names, address ranges, cgroup paths, /var/log/journal. A test that
// needs a host-wide name claims it here, with a lock that lives as long
// as its process (the kernel drops it when a suite dies).

// claimDir holds the lock files (on the host's /run tmpfs: gone at boot,
// as the claims should be).
const claimDir = "/run/sdengine-it"

var bridgeSeq atomic.Int32

// claimBridgeNumber returns n in [0, 250) for a bridge sdit<n> and the
// address ranges derived from it (10.213.<n>.0/24 and the like), claimed
// for this process: no other suite on the machine gets it, and no bridge
// of that name exists. The start is spread by pid so that suites seldom
// probe the same numbers.
func claimBridgeNumber(t testing.TB) int {
	t.Helper()
	start := os.Getpid()*7 + int(bridgeSeq.Add(1))
	for i := 0; i < 250; i++ {
		n := (start + i) % 250
		if _, err := net.InterfaceByName(fmt.Sprintf("sdit%d", n)); err == nil {
			continue
		}
		if claim(t, fmt.Sprintf("bridge-%d", n)) {
			return n
		}
	}
	t.Fatal("no free sdit bridge number: 250 claimed by running suites")
	return 0
}

// claim takes the host-wide lock name for the rest of this process and
// reports whether it got it (false: another suite, or this one, has it).
// The descriptor is kept open on purpose: closing it would drop the lock.
func claim(t testing.TB, name string) bool {
	t.Helper()
	f, err := lockFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false
		}
		t.Fatalf("claim %s: %v", name, err)
	}
	claims = append(claims, f)
	return true
}

// claims keeps the claimed locks' files open (and referenced) until exit.
var claims []*os.File

func lockFile(name string) (*os.File, error) {
	if err := os.MkdirAll(claimDir, 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(claimDir, name+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
}
