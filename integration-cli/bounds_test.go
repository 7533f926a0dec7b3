//go:build integration

package integrationcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bounds on what one client can make the daemon hold (issue 9, item 4):
// request bodies, connections that send nothing, killed attach and logs
// clients.

// boundsDaemon starts a private daemon with env set in its environment
// (the API's test knobs: SDENGINE_API_HEADER_TIMEOUT, ..._MAX_PENDING).
func boundsDaemon(t *testing.T, env ...string) *Daemon {
	t.Helper()
	d := NewDaemon(t)
	if len(env) > 0 {
		d.Wrapper = append([]string{"/usr/bin/env"}, env...) // env execs dockerd: same pid
	}
	d.Start(t)
	t.Cleanup(func() { d.Cleanup(t) })
	return d
}

func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// waitUntil polls cond every 20ms for at most d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled reads count until three readings 100 ms apart agree (at most
// 5 s) and returns the last.
func settled(count func() int) int {
	last, same := count(), 0
	for deadline := time.Now().Add(5 * time.Second); same < 2 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		n := count()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}

// apiClient talks HTTP to the daemon's socket, one connection a request.
func apiClient(d *Daemon) *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.Sock)
		},
	}}
}

// bigCreateBody is a create request of n bytes whose one environment
// variable is most of it, produced as it is sent.
func bigCreateBody(n int64) io.Reader {
	const head, tail = `{"Image":"busybox","Cmd":["true"],"Env":["A=`, `"]}`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(byteRepeater('a'), n-int64(len(head)+len(tail))), strings.NewReader(tail))
}

type byteRepeater byte

func (r byteRepeater) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A 100 MB create body is refused with a 413 and Docker's error form, and
// the daemon does not grow: today's daemon read it whole (RSS 23 MB to
// 1.4 GB, for 20 minutes). Declared with Content-Length it is refused
// before a byte is read; sent chunked, at most the 4 MiB limit is read and
// then given back.
func TestAPIBodyLimit(t *testing.T) {
	d := boundsDaemon(t)
	loadBusybox(t, d)
	c := apiClient(d)
	send := func(body io.Reader, size int64) (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://docker/v1.51/containers/create", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// A real create first, so that what it costs once is in the baseline.
	if status, body := send(strings.NewReader(`{"Image":"busybox","Cmd":["true"]}`), -1); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	const size = 100 << 20
	// Slack for the runtime's own noise (allocator, timers, GC state).
	const slackKB = 4 << 10
	for _, c := range []struct {
		name string
		size int64 // -1: chunked
	}{{"Content-Length", size}, {"chunked", -1}} {
		time.Sleep(1500 * time.Millisecond) // the daemon gives memory back at most once a second
		before := procStatusKB(t, d.Pid(), "VmRSS")
		start := time.Now()
		status, body := send(bigCreateBody(size), c.size)
		took := time.Since(start)
		var m map[string]string
		if status != http.StatusRequestEntityTooLarge || json.Unmarshal([]byte(body), &m) != nil || len(m) != 1 ||
			!strings.Contains(m["message"], "request body is too large: POST /v1.51/containers/create takes at most 4 MiB") {
			t.Fatalf("%s: %d %q, want 413 {\"message\": \"request body is too large...\"}", c.name, status, body)
		}
		// A chunked body is given back at most a second later.
		time.Sleep(1500 * time.Millisecond)
		after := procStatusKB(t, d.Pid(), "VmRSS")
		t.Logf("%s: 413 in %s; daemon RSS %d kB before, %d kB after (%+d kB)", c.name, took.Round(time.Millisecond), before, after, after-before)
		if after-before > slackKB {
			t.Errorf("%s: daemon RSS grew %d kB (more than %d kB) for a refused body", c.name, after-before, slackKB)
		}
	}
	if n := len(strings.Fields(d.MustCLI(t, "ps", "-aq"))); n != 1 {
		t.Errorf("%d containers, want only the first", n)
	}
}

// halfOpen opens n connections to the daemon's socket that never finish
// their request headers: every other one sends nothing, the others part of
// a header.
func halfOpen(t *testing.T, d *Daemon, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("unix", d.Sock, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if i%2 == 1 {
			fmt.Fprint(c, "GET /version HTTP/1.1\r\nHost: docker\r\nUser-Agent: slow")
		}
		conns = append(conns, c)
	}
	return conns
}

// closedByPeer reports whether the daemon closed c (EOF or reset).
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// versionAnswers runs `docker version` with both CLIs within a bound.
func versionAnswers(t *testing.T, d *Daemon, bound time.Duration) {
	t.Helper()
	for _, cli := range []string{ourCLI, stockCLI} {
		start := time.Now()
		r := run(cli, d.Host(), "", "version", "--format", "{{.Server.Version}}")
		took := time.Since(start)
		if r.Code != 0 || strings.TrimSpace(r.Stdout) == "" {
			t.Fatalf("%s version: %s", filepath.Base(cli), r)
		}
		t.Logf("%s version answered in %s", cli, took.Round(time.Millisecond))
		if took > bound {
			t.Errorf("%s version took %s (more than %s)", cli, took, bound)
		}
	}
}

// 300 connections that send no complete header are held (below the cap of
// 512) while clients are served, and closed when the header timeout (3 s
// here, 30 s by default) runs out.
func TestAPIHalfOpenConnectionsTimeOut(t *testing.T) {
	const timeout = 3 * time.Second
	d := boundsDaemon(t, "SDENGINE_API_HEADER_TIMEOUT="+timeout.String())
	pid := d.Pid()
	base := fdCount(t, pid)
	start := time.Now()
	conns := halfOpen(t, d, 300)
	waitUntil(t, 10*time.Second, "the daemon holding 300 connections", func() bool { return fdCount(t, pid) >= base+300 })
	versionAnswers(t, d, 5*time.Second)
	open := func() int {
		n := 0
		for _, c := range conns {
			if !closedByPeer(c) {
				n++
			}
		}
		return n
	}
	if n := open(); n < 300 && time.Since(start) < timeout-500*time.Millisecond {
		t.Errorf("%d of 300 closed before the header timeout", 300-n)
	}
	waitUntil(t, timeout+10*time.Second, "the 300 connections closed", func() bool { return open() == 0 })
	t.Logf("300 half-open connections closed %s after they were opened (header timeout %s)", time.Since(start).Round(100*time.Millisecond), timeout)
	if took := time.Since(start); took < timeout-500*time.Millisecond {
		t.Errorf("closed after %s, before the header timeout", took)
	}
	waitUntil(t, 5*time.Second, "the daemon's fds back to "+strconv.Itoa(base), func() bool { return fdCount(t, pid) <= base })
	versionAnswers(t, d, 5*time.Second)
}

// Beyond the cap on connections without a complete header (50 here, 512 by
// default) the oldest are closed for newcomers: 300 silent connections
// never cost the daemon more than the cap, and clients are served.
func TestAPIHalfOpenConnectionsCapped(t *testing.T) {
	const limit = 50
	d := boundsDaemon(t, "SDENGINE_API_HEADER_TIMEOUT=1m", "SDENGINE_API_MAX_PENDING="+strconv.Itoa(limit))
	pid := d.Pid()
	base := fdCount(t, pid)
	peak := 0
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			mu.Lock()
			peak = max(peak, len(ents))
			mu.Unlock()
		}
	}()
	conns := halfOpen(t, d, 300)
	versionAnswers(t, d, 10*time.Second)
	closed := 0
	for _, c := range conns {
		if closedByPeer(c) {
			closed++
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("daemon fds: %d before, peak %d with 300 silent connections; %d of them closed by the daemon", base, peak, closed)
	// The cap, the CLI's connection, and one accepted while the evicted
	// one is being closed.
	if peak > base+limit+3 {
		t.Errorf("the daemon held %d fds (%d before): more than the cap of %d", peak, base, limit)
	}
	if closed < 300-limit {
		t.Errorf("%d connections closed, want at least %d", closed, 300-limit)
	}
}

// shimPid is the pid of the shim of container id.
func shimPid(t *testing.T, d *Daemon, id string) int {
	t.Helper()
	if pid := shimOf(t, d, id); pid != 0 {
		return pid
	}
	t.Fatalf("no shim for %s", id)
	return 0
}

// startClient starts a CLI that stays attached (its stdin a pipe held
// open, as a terminal would be).
func startClient(t *testing.T, d *Daemon, cli string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(cli, args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CLI_HINTS=false")
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func kill9(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// 100 `docker attach` clients killed with SIGKILL, ten at a time, leave
// the daemon's and the shims' fd counts where they were: today each leaks
// two daemon fds and one shim fd until the container exits. The three
// containers cover an attach with stdin (whose end the kill shows as EOF),
// one without (the CLI half-closed at once: only the hangup tells) and one
// with output (the failed write tells). Tolerance: none for the shims,
// 2 fds for the daemon.
func TestKilledAttachClientsReleaseEverything(t *testing.T) {
	d := boundsDaemon(t)
	loadBusybox(t, d)
	ids := []string{
		remember(d.MustCLI(t, "run", "-d", "-i", "busybox", "sleep", "100000")),
		remember(d.MustCLI(t, "run", "-d", "busybox", "sleep", "100000")),
		remember(d.MustCLI(t, "run", "-d", "-i", "busybox", "sh", "-c", "while :; do echo tick; sleep 0.1; done")),
	}
	pid := d.Pid()
	shims := make([]int, len(ids))
	for i, id := range ids {
		shims[i] = shimPid(t, d, id)
	}
	shimFds := func() int {
		n := 0
		for _, p := range shims {
			n += fdCount(t, p)
		}
		return n
	}
	// One attach killed first: what the first one costs for good (the
	// daemon's hangup watch) belongs in the baseline.
	// The count is taken once the shims are quiet: right after `run -d` a
	// shim may still hold a descriptor of the start that it closes a
	// moment later (on a loaded machine, later still), and a baseline that
	// counted it is never met again.
	s0 := settled(shimFds)
	cmd := startClient(t, d, ourCLI, "attach", ids[0])
	waitUntil(t, 10*time.Second, "the first attach", func() bool { return shimFds() > s0 })
	kill9(cmd)
	waitUntil(t, 10*time.Second, fmt.Sprintf("the first attach released (shims' fds %d before it)", s0), func() bool { return shimFds() <= s0 })
	time.Sleep(200 * time.Millisecond)
	baseDaemon, baseShims := fdCount(t, pid), shimFds()

	const clients, batch = 100, 10
	peakDaemon := baseDaemon
	for b := 0; b < clients/batch; b++ {
		var cmds []*exec.Cmd
		for i := 0; i < batch; i++ {
			cli := ourCLI
			if (b*batch+i)%2 == 1 {
				cli = stockCLI
			}
			cmds = append(cmds, startClient(t, d, cli, "attach", ids[(b*batch+i)%len(ids)]))
		}
		waitUntil(t, 20*time.Second, fmt.Sprintf("batch %d attached", b), func() bool { return shimFds() >= baseShims+batch })
		peakDaemon = max(peakDaemon, fdCount(t, pid))
		for _, c := range cmds {
			kill9(c)
		}
	}
	start := time.Now()
	waitUntil(t, 10*time.Second, "the daemon's and the shims' fds back", func() bool {
		return fdCount(t, pid) <= baseDaemon+2 && shimFds() <= baseShims
	})
	t.Logf("%d killed attach clients: daemon fds %d before, %d with %d attached, %d after; shims' fds %d before, %d after (settled %s after the last kill)",
		clients, baseDaemon, peakDaemon, batch, fdCount(t, pid), baseShims, shimFds(), time.Since(start).Round(time.Millisecond))
	// The containers ran on, and attach still works.
	if n := len(strings.Fields(d.MustCLI(t, "ps", "-q"))); n != len(ids) {
		t.Errorf("%d containers running, want %d", n, len(ids))
	}
	cmd = exec.Command(ourCLI, "attach", ids[2])
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host())
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	_, err := io.ReadFull(out, buf)
	kill9(cmd)
	if err != nil || string(buf) != "tick\n" {
		t.Errorf("attach after the kills: %q %v", buf, err)
	}
}

// Killed `docker logs -f` clients release their connection and the log
// file at once too.
func TestKilledLogsFollowClientsReleaseEverything(t *testing.T) {
	d := boundsDaemon(t)
	loadBusybox(t, d)
	id := remember(d.MustCLI(t, "run", "-d", "busybox", "sh", "-c", "while :; do echo tick; sleep 0.1; done"))
	pid := d.Pid()
	cmd := startClient(t, d, ourCLI, "logs", "-f", id)
	time.Sleep(300 * time.Millisecond)
	kill9(cmd)
	time.Sleep(300 * time.Millisecond)
	base := fdCount(t, pid)
	var cmds []*exec.Cmd
	for i := 0; i < 20; i++ {
		cli := ourCLI
		if i%2 == 1 {
			cli = stockCLI
		}
		cmds = append(cmds, startClient(t, d, cli, "logs", "-f", id))
	}
	// Each holds at least its connection and the log file.
	waitUntil(t, 20*time.Second, "20 followers", func() bool { return fdCount(t, pid) >= base+40 })
	peak := fdCount(t, pid)
	for _, c := range cmds {
		kill9(c)
	}
	waitUntil(t, 10*time.Second, "the daemon's fds back to "+strconv.Itoa(base), func() bool { return fdCount(t, pid) <= base })
	t.Logf("20 killed logs -f clients: daemon fds %d before, %d while following, %d after", base, peak, fdCount(t, pid))
}
