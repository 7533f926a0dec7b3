//go:build integration

package integrationcli

import (
	"slices"
	"strings"
	"testing"
)

// Batch commands over many containers (stop, start, kill, rm -f), with
// both CLIs: one name that does not exist among them is reported on
// stderr and makes the status 1 (rm -f: 0, as Docker's), while every
// other container is still acted on and printed, in the order of the
// arguments. How fast a batch
// goes is hack/bench's business ("stop -t 1 of 50 in one call"), not
// this test's.
func TestBatchCommandsWithOneBadName(t *testing.T) {
	const n = 20
	const bad = "no-such-batch-container"
	clis(t, shared, func(t *testing.T, cli func(args ...string) Result) {
		ids := make([]string, 0, n)
		t.Cleanup(func() {
			if len(ids) > 0 {
				shared.CLI(append([]string{"rm", "-f"}, ids...)...)
			}
		})
		for i := 0; i < n; i++ {
			ids = append(ids, shared.MustCLI(t, "run", "-d", "--network", "none", "busybox", "sleep", "1000"))
		}
		// The bad name in the middle: those after it are still done.
		args := slices.Concat(ids[:n/2], []string{bad}, ids[n/2:])

		batch := func(code int, cmd ...string) {
			t.Helper()
			r := cli(append(cmd, args...)...)
			if r.Code != code {
				t.Fatalf("docker %s with a bad name: want exit status %d, got %s", strings.Join(cmd, " "), code, r)
			}
			if !strings.Contains(r.Stderr, "No such container: "+bad) {
				t.Errorf("docker %s: the bad name is not reported on stderr: %s", strings.Join(cmd, " "), r)
			}
			if got := strings.Fields(r.Stdout); !slices.Equal(got, ids) {
				t.Errorf("docker %s printed\n%q\nwant every good name in argument order\n%q", strings.Join(cmd, " "), got, ids)
			}
		}
		states := func(want string) {
			t.Helper()
			out := shared.MustCLI(t, append([]string{"inspect", "-f", "{{.State.Status}}"}, ids...)...)
			for i, s := range strings.Fields(out) {
				if s != want {
					t.Errorf("container %d (%s) is %s, want %s", i, ids[i][:12], s, want)
				}
			}
		}

		// busybox's sleep as PID 1 ignores SIGTERM: each stop runs to its
		// SIGKILL after a second.
		batch(1, "stop", "-t", "1")
		states("exited")
		batch(1, "start")
		states("running")
		batch(1, "kill")
		states("exited")
		batch(1, "start")
		states("running")
		// As Docker's CLI: rm -f says that a container is not there but
		// that is what was asked for, so the status stays 0.
		batch(0, "rm", "-f")
		out := shared.MustCLI(t, "ps", "-aq", "--no-trunc")
		for _, id := range ids {
			if strings.Contains(out, id) {
				t.Errorf("container %s still listed after rm -f", id[:12])
			}
		}
		ids = nil
	})
}
