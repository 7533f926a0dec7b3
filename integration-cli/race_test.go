//go:build integration

package integrationcli

import (
	"fmt"
	"math/rand"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// parallel runs n copies of the CLI command at once and returns what each
// said.
func parallel(d *Daemon, n int, args ...string) []Result {
	out := make([]Result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = d.CLI(args...)
		}()
	}
	close(start)
	wg.Wait()
	return out
}

var hexIDs = regexp.MustCompile(`[0-9a-f]{64}`)

// tally counts results by their first line of stderr ("ok" for success).
func tally(rs []Result) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		k := "ok"
		if r.Code != 0 {
			k = strings.SplitN(strings.TrimSpace(r.Stderr), "\n", 2)[0]
			k = hexIDs.ReplaceAllString(k, "<id>")
		}
		m[k]++
	}
	return m
}

func formatTally(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %3d × %s", m[k], k)
	}
	return b.String()
}

// 20 parallel stops of one container all succeed (Docker answers a stop
// of a stopped container with 304, which the CLI takes as success).
func TestRaceParallelStop(t *testing.T) {
	for round := 0; round < 3; round++ {
		id := remember(shared.MustCLI(t, "run", "-d", "busybox", "sh", "-c",
			`trap 'exit 0' TERM; echo ready; while true; do sleep 0.1; done`))
		waitReady(t, id)
		rs := parallel(shared, 20, "stop", id)
		got := tally(rs)
		t.Logf("round %d: 20 parallel stops:%s", round, formatTally(got))
		if got["ok"] != 20 {
			t.Errorf("round %d: not every stop succeeded:%s", round, formatTally(got))
		}
		if st := shared.MustCLI(t, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", id); st != "exited 0" {
			t.Errorf("after the stops: %q", st)
		}
		shared.MustCLI(t, "rm", id)
	}
}

// A stop racing the container's own exit succeeds: 40 containers that
// exit after 0.3 s are stopped at random moments around their exit.
func TestRaceStopDuringExit(t *testing.T) {
	const n = 40
	results := make([]Result, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 10)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := shared.CLI("run", "-d", "busybox", "sh", "-c", "sleep 0.3; exit 3")
			ids[i] = remember(r.Stdout)
			if r.Code != 0 {
				results[i] = r
				return
			}
			time.Sleep(time.Duration(100+rand.Intn(500)) * time.Millisecond)
			results[i] = shared.CLI("stop", ids[i])
		}()
	}
	wg.Wait()
	got := tally(results)
	t.Logf("%d stops racing the exit:%s", n, formatTally(got))
	if got["ok"] != n {
		t.Errorf("stops racing the exit failed:%s", formatTally(got))
	}
	var created []string
	for _, id := range ids {
		if id != "" {
			created = append(created, id)
		}
	}
	states := shared.MustCLI(t, append([]string{"inspect", "--format", "{{.State.Status}}"}, created...)...)
	if strings.Count(states, "exited") != len(created) {
		t.Errorf("after the stops: %q", states)
	}
	shared.MustCLI(t, append([]string{"rm"}, created...)...)
}

// 20 parallel forced removals of one running container: it is removed,
// and every other call is answered as Docker answers it: success (it was
// removed before that call took its turn), "removal ... is already in
// progress" (409) or "No such container" (404), never "is running".
func TestRaceParallelRemove(t *testing.T) {
	for round := 0; round < 3; round++ {
		id := remember(shared.MustCLI(t, "run", "-d", "busybox", "sleep", "60"))
		rs := parallel(shared, 20, "rm", "-f", id)
		got := tally(rs)
		t.Logf("round %d: 20 parallel rm -f:%s", round, formatTally(got))
		if got["ok"] == 0 {
			t.Errorf("round %d: no rm -f succeeded", round)
		}
		for k := range got {
			switch {
			case k == "ok":
			case strings.HasSuffix(k, "removal of container <id> is already in progress"):
			case strings.HasSuffix(k, "No such container: <id>"):
			default:
				t.Errorf("round %d: rm -f answered %q", round, k)
			}
		}
		if r := shared.CLI("inspect", id); r.Code == 0 {
			t.Errorf("round %d: container still there after the removals", round)
		}
	}
}
