//go:build integration

package integrationcli

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// seenIDs collects every container ID the suite created, so the final
// check can look for their cgroups and processes.
var (
	seenMu  sync.Mutex // parallel tests remember IDs too
	seenIDs = map[string]bool{}
)

func remember(id string) string {
	id = strings.TrimSpace(id)
	if len(id) == 64 {
		seenMu.Lock()
		seenIDs[id] = true
		seenMu.Unlock()
	}
	return id
}

// seen is a copy of the IDs remembered so far.
func seen() map[string]bool {
	seenMu.Lock()
	defer seenMu.Unlock()
	out := make(map[string]bool, len(seenIDs))
	for id := range seenIDs {
		out[id] = true
	}
	return out
}

// checkNothingLeft fails t if the daemon left a mount, a process or a
// cgroup behind.
func checkNothingLeft(t testing.TB, d *Daemon) {
	t.Helper()
	ids := seen()
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if strings.Contains(s.Text(), d.Dir) {
				t.Errorf("mount left behind: %s", s.Text())
			}
		}
		f.Close()
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if strings.Contains(string(cmdline), d.Dir) {
			t.Errorf("process left behind: %s %q", filepath.Base(p), strings.ReplaceAll(string(cmdline), "\x00", " "))
			continue
		}
		cg, _ := os.ReadFile(filepath.Join(p, "cgroup"))
		for id := range ids {
			if strings.Contains(string(cg), id) {
				t.Errorf("container process left behind: pid %s in cgroup of %s", filepath.Base(p), id[:12])
			}
		}
	}
	for id := range ids {
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/*/" + id)
		more, _ := filepath.Glob("/sys/fs/cgroup/*/" + id)
		for _, dir := range append(dirs, more...) {
			t.Errorf("cgroup left behind: %s", dir)
		}
	}
}
