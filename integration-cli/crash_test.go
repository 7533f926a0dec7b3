//go:build integration

package integrationcli

// The fault-injection suite: a private daemon is started with one crash
// point armed (internal/crashpoint), an operation is driven until the
// daemon blocks there, the daemon is killed with SIGKILL (by PID), and a
// new daemon on the same data root must show that nothing running is
// hidden, nothing completed is lost and nothing is left for a container
// that is gone.

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashDaemon is a private daemon with a crash point armed.
type crashDaemon struct {
	*Daemon
	point, markers string
}

// newCrashDaemon starts a daemon with point armed and busybox loaded.
func newCrashDaemon(t *testing.T, point string) *crashDaemon {
	t.Helper()
	d := NewDaemon(t)
	cd := &crashDaemon{Daemon: d, point: point, markers: filepath.Join(d.Dir, "crashpoints")}
	if err := os.Mkdir(cd.markers, 0o755); err != nil {
		t.Fatal(err)
	}
	d.Env = []string{"SDENGINE_CRASHPOINT=" + point, "SDENGINE_CRASHPOINT_DIR=" + cd.markers}
	d.Start(t)
	loadBusybox(t, d)
	return cd
}

// crash runs the CLI command args until the daemon reaches the armed
// point, kills the daemon with SIGKILL, notes every container ID found on
// disk, and starts a new daemon (nothing armed) on the same data root. It
// returns what the command said (it may have completed first) and the IDs.
func (cd *crashDaemon) crash(t *testing.T, args ...string) (Result, map[string]bool) {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- cd.CLI(args...) }()
	marker := filepath.Join(cd.markers, cd.point)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crash point %s not reached by docker %s; log:\n%s", cd.point, strings.Join(args, " "), cd.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cd.Kill(t)
	var r Result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("docker %s did not return after the daemon was killed", strings.Join(args, " "))
	}
	known := idsOnDisk(cd.Daemon)
	for id := range known {
		remember(id)
	}
	cd.Env = nil
	cd.Start(t)
	return r, known
}

var hexID = regexp.MustCompile(`^[0-9a-f]{64}$`)

// idsOnDisk is every container ID the daemon's directories name.
func idsOnDisk(d *Daemon) map[string]bool {
	ids := map[string]bool{}
	for _, dir := range []string{
		filepath.Join(d.Root, "containers"), filepath.Join(d.ExecRoot, "containers"), filepath.Join(d.ExecRoot, "runc"),
	} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if hexID.MatchString(e.Name()) {
				ids[e.Name()] = true
			}
		}
	}
	ents, _ := os.ReadDir(filepath.Join(d.Root, "image", "mounts"))
	for _, e := range ents {
		if id := strings.TrimSuffix(e.Name(), ".json"); hexID.MatchString(id) {
			ids[id] = true
		}
	}
	return ids
}

// containerIDs lists the daemon's containers: all of them, or the running.
func containerIDs(t *testing.T, d *Daemon, all bool) map[string]bool {
	t.Helper()
	args := []string{"ps", "-q", "--no-trunc"}
	if all {
		args = append(args, "-a")
	}
	ids := map[string]bool{}
	for _, id := range strings.Fields(d.MustCLI(t, args...)) {
		ids[id] = true
	}
	return ids
}

// graphDirs lists the graph driver's layer directories.
func graphDirs(d *Daemon) map[string]bool {
	out := map[string]bool{}
	for _, dir := range []string{filepath.Join(d.Root, "graph", "overlay2"), filepath.Join(d.Root, "graph", "vfs", "dir")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "l" {
				out[e.Name()] = true
			}
		}
	}
	return out
}

// imageCacheIDs lists the graph directories the image layers use.
func imageCacheIDs(t *testing.T, d *Daemon) map[string]bool {
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(d.Root, "image", "layerdb", "sha256", "*.json"))
	for _, f := range files {
		var l struct {
			CacheID string `json:"cache_id"`
		}
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &l)
		}
		if err != nil {
			t.Fatalf("layer record %s: %v", f, err)
		}
		out[l.CacheID] = true
	}
	return out
}

// shimPids maps container IDs to the shim processes serving them (a shim
// serves a group of containers: each one's state directory names it).
func shimPids(d *Daemon) map[string]int {
	out := map[string]int{}
	ents, _ := os.ReadDir(filepath.Join(d.ExecRoot, "containers"))
	for _, e := range ents {
		if pid := liveShimOf(d, e.Name()); pid != 0 {
			out[e.Name()] = pid
		}
	}
	return out
}

// checkConsistent checks the daemon's containers against everything on
// the machine: each directory, layer and runtime state belongs to a
// listed container, each shim, mount and cgroup to a running one, and
// nothing at all is left of the known IDs that are not listed.
func checkConsistent(t *testing.T, d *Daemon, known map[string]bool) {
	t.Helper()
	all, running := containerIDs(t, d, true), containerIDs(t, d, false)
	for id := range all {
		known[id] = true
	}
	ents, _ := os.ReadDir(filepath.Join(d.Root, "containers"))
	for _, e := range ents {
		if !all[e.Name()] {
			t.Errorf("container directory of an unlisted container: %s", e.Name())
		} else if _, err := os.Stat(filepath.Join(d.Root, "containers", e.Name(), "config.v2.json")); err != nil {
			t.Errorf("container directory without a record: %s", e.Name())
		}
	}
	mounts, _ := os.ReadDir(filepath.Join(d.Root, "image", "mounts"))
	for _, e := range mounts {
		if id := strings.TrimSuffix(e.Name(), ".json"); !all[id] {
			t.Errorf("writable layer record of an unlisted container: %s", e.Name())
		}
	}
	cache := imageCacheIDs(t, d)
	for dir := range graphDirs(d) {
		if !all[dir] && !cache[dir] {
			t.Errorf("layer directory nothing references: %s", dir)
		}
	}
	for id := range all {
		if _, err := os.Stat(filepath.Join(d.Root, "image", "mounts", id+".json")); err != nil {
			t.Errorf("listed container %s has no writable layer: %v", id[:12], err)
		}
	}
	for _, sub := range []string{"containers", "runc"} {
		ents, _ := os.ReadDir(filepath.Join(d.ExecRoot, sub))
		for _, e := range ents {
			if !running[e.Name()] {
				t.Errorf("runtime state (%s) of a container that is not running: %s", sub, e.Name())
			}
		}
	}
	shims := shimPids(d)
	for id, pid := range shims {
		if !running[id] {
			t.Errorf("shim (pid %d) of a container that is not running: %s", pid, id)
		}
	}
	for id := range running {
		if shims[id] == 0 {
			t.Errorf("running container %s has no shim", id[:12])
		}
	}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			line := s.Text()
			if !strings.Contains(line, d.Dir) {
				continue
			}
			ok := false
			for id := range running {
				if strings.Contains(line, "/"+id+"/merged ") {
					ok = true
				}
			}
			if !ok {
				t.Errorf("mount of no running container: %s", line)
			}
		}
		f.Close()
	}
	for id := range known {
		if running[id] {
			continue
		}
		cgs, _ := filepath.Glob("/sys/fs/cgroup/*/docker/" + id)
		more, _ := filepath.Glob("/sys/fs/cgroup/*/*/*docker-" + id + "*")
		for _, cg := range append(cgs, more...) {
			t.Errorf("cgroup of a container that is not running: %s", cg)
		}
		if !all[id] {
			if _, err := os.Stat(filepath.Join(d.Root, "containers", id)); err == nil {
				t.Errorf("directory of a container that is gone: %s", id)
			}
		}
	}
	if t.Failed() {
		t.Logf("daemon log:\n%s", d.Log())
	}
}

// initPid is the host pid of a container's init, from libcontainer's state.
func initPid(t *testing.T, d *Daemon, id string) int {
	t.Helper()
	var st struct {
		Pid int `json:"init_process_pid"`
	}
	b, err := os.ReadFile(filepath.Join(d.ExecRoot, "runc", id, "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil || st.Pid <= 0 {
		t.Fatalf("init pid of %s: %v (%d)", id[:12], err, st.Pid)
	}
	return st.Pid
}

func inspectState(t *testing.T, d *Daemon, id string) string {
	t.Helper()
	return d.MustCLI(t, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", id)
}

// recovered asserts the restarted daemon logged a recovery step.
func recovered(t *testing.T, d *Daemon, what string) {
	t.Helper()
	if !strings.Contains(d.Log(), what) {
		t.Errorf("the restarted daemon did not log %q", what)
	}
}

// A create cut short by a crash leaves nothing behind and loses nothing:
// the container was never reported created, and its name is free.
func TestCrashCreateIncomplete(t *testing.T) {
	for _, point := range []string{"create-after-dir", "create-layer-before-record", "create-after-layer"} {
		t.Run(point, func(t *testing.T) {
			d := newCrashDaemon(t, point)
			defer d.Cleanup(t)
			r, known := d.crash(t, "create", "--name", "half", "busybox", "sleep", "60")
			if r.Code == 0 {
				t.Fatalf("create completed before the crash: %s", r)
			}
			if len(known) != 1 {
				t.Fatalf("the crash left %d container IDs on disk, want 1: %v", len(known), known)
			}
			if out := d.MustCLI(t, "ps", "-aq"); out != "" {
				t.Fatalf("a container whose create never completed is listed: %q", out)
			}
			checkConsistent(t, d.Daemon, known)
			recovered(t, d.Daemon, "recovery: removing a container directory without a record")
			id := remember(d.MustCLI(t, "create", "--name", "half", "busybox", "true"))
			d.MustCLI(t, "rm", id)
		})
	}
}

// A create that wrote its record is complete: the container is listed
// and works, though the client never got its answer.
func TestCrashCreateComplete(t *testing.T) {
	d := newCrashDaemon(t, "create-after-record")
	defer d.Cleanup(t)
	_, known := d.crash(t, "create", "--name", "whole", "busybox", "sh", "-c", "exit 4")
	if st := inspectState(t, d.Daemon, "whole"); st != "created 0" {
		t.Fatalf("completed create after the crash: %q", st)
	}
	checkConsistent(t, d.Daemon, known)
	if r := d.CLI("start", "-a", "whole"); r.Code != 4 {
		t.Fatalf("start of the recovered container: %s", r)
	}
	d.MustCLI(t, "rm", "whole")
}

// A start cut short before the process ran is undone: the container is
// created (not hidden as running, nothing of the start left) and starts.
func TestCrashStartNotRun(t *testing.T) {
	for _, point := range []string{"start-after-mount", "start-after-shim"} {
		t.Run(point, func(t *testing.T) {
			d := newCrashDaemon(t, point)
			defer d.Cleanup(t)
			id := remember(d.MustCLI(t, "create", "busybox", "sh", "-c", "echo ran; sleep 60"))
			r, known := d.crash(t, "start", id)
			if r.Code == 0 {
				t.Fatalf("start completed before the crash: %s", r)
			}
			if st := inspectState(t, d.Daemon, id); st != "created 0" {
				t.Fatalf("after a crash before the process ran: %q", st)
			}
			checkConsistent(t, d.Daemon, known)
			if point == "start-after-shim" {
				recovered(t, d.Daemon, "recovery: releasing what a start or exit cut short left")
			}
			if logs := d.MustCLI(t, "logs", id); logs != "" {
				t.Errorf("the process ran though its start was rolled back: %q", logs)
			}
			d.MustCLI(t, "start", id)
			waitFor(t, func() bool { return strings.Contains(d.CLI("logs", id).Stdout, "ran") })
			d.MustCLI(t, "rm", "-f", id)
			checkConsistent(t, d.Daemon, known)
		})
	}
}

// The deterministic case of a hidden container: the process runs, the
// record still says created (a delayed rename of the record, then kill
// -9). The restarted daemon adopts it as running: ps shows it, exec, stop
// and kill work, and it is the same process.
func TestCrashStartBeforeRecord(t *testing.T) {
	d := newCrashDaemon(t, "start-before-record")
	defer d.Cleanup(t)
	id := remember(d.MustCLI(t, "create", "busybox", "sh", "-c",
		`trap 'exit 0' TERM; echo ready; while true; do sleep 0.1; done`))
	d.crash(t, "start", id) // the client may see the start fail: it was cut short
	waitFor(t, func() bool { return strings.Contains(d.CLI("logs", id).Stdout, "ready") })
	known := map[string]bool{id: true}
	if !containerIDs(t, d.Daemon, false)[id] {
		t.Fatalf("running container hidden after the crash: ps -a:\n%s\nlog:\n%s", d.MustCLI(t, "ps", "-a"), d.Log())
	}
	checkConsistent(t, d.Daemon, known)
	recovered(t, d.Daemon, "adopted as running")
	pid := initPid(t, d.Daemon, id)
	if got := d.MustCLI(t, "inspect", "--format", "{{.State.Pid}}", id); got != strconv.Itoa(pid) {
		t.Errorf("inspect pid %s, the container's init is %d", got, pid)
	}
	if out := d.MustCLI(t, "exec", id, "echo", "exec-ok"); out != "exec-ok" {
		t.Errorf("exec in the adopted container: %q", out)
	}
	d.MustCLI(t, "stop", id)
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("stop left the process %d running", pid)
	}
	if st := inspectState(t, d.Daemon, id); st != "exited 0" {
		t.Errorf("after stop: %q", st)
	}
	d.MustCLI(t, "start", id)
	d.MustCLI(t, "kill", id)
	if st := inspectState(t, d.Daemon, id); st != "exited 137" {
		t.Errorf("after kill: %q", st)
	}
	d.MustCLI(t, "rm", id)
	checkConsistent(t, d.Daemon, known)
}

// A stop cut short after its signal: the container exits while no daemon
// runs, and its exit code is recorded from what its shim kept.
func TestCrashStop(t *testing.T) {
	d := newCrashDaemon(t, "stop-after-signal")
	defer d.Cleanup(t)
	// Stop's signal is sent, then the daemon dies: the container traps
	// it and exits 3 two seconds later, while no daemon runs.
	id := remember(d.MustCLI(t, "run", "-d", "busybox", "sh", "-c",
		`trap 'sleep 2; exit 3' TERM; echo ready; while true; do sleep 0.1; done`))
	waitFor(t, func() bool { return strings.Contains(d.CLI("logs", id).Stdout, "ready") })
	_, known := d.crash(t, "stop", id)
	if out := strings.TrimSpace(d.MustCLI(t, "wait", id)); out != "3" {
		t.Fatalf("exit during the crash: wait says %q", out)
	}
	checkConsistent(t, d.Daemon, known)
	d.MustCLI(t, "rm", id)
}

// An exit cut short, before or after it was recorded: the exit code
// survives and nothing of the run is left.
func TestCrashExit(t *testing.T) {
	for point, code := range map[string]string{"exit-before-record": "7", "exit-after-record": "9"} {
		t.Run(point, func(t *testing.T) {
			d := newCrashDaemon(t, point)
			defer d.Cleanup(t)
			r, known := d.crash(t, "run", "-d", "busybox", "sh", "-c", "sleep 0.5; exit "+code)
			id := remember(r.Stdout)
			if !hexID.MatchString(id) {
				t.Fatalf("run -d: %s", r)
			}
			if st := inspectState(t, d.Daemon, id); st != "exited "+code {
				t.Fatalf("exit code after the crash: %q (want exited %s)\n%s", st, code, d.Log())
			}
			checkConsistent(t, d.Daemon, known)
			d.MustCLI(t, "rm", id)
		})
	}
}

// A removal cut short at any step is finished: the container is gone and
// nothing of it is left.
func TestCrashRemove(t *testing.T) {
	for _, point := range []string{"rm-after-intent", "rm-after-layer-removed", "rm-after-record-removed"} {
		t.Run(point, func(t *testing.T) {
			d := newCrashDaemon(t, point)
			defer d.Cleanup(t)
			id := remember(d.MustCLI(t, "run", "-d", "--name", "doomed", "busybox", "sleep", "60"))
			d.MustCLI(t, "create", "--name", "bystander", "busybox")
			_, known := d.crash(t, "rm", "-f", id)
			if all := containerIDs(t, d.Daemon, true); all[id] || len(all) != 1 {
				t.Fatalf("after a crash during rm: ps -a\n%s", d.MustCLI(t, "ps", "-a"))
			}
			checkConsistent(t, d.Daemon, known)
			if point == "rm-after-record-removed" {
				recovered(t, d.Daemon, "recovery: removing a container directory without a record")
			} else {
				recovered(t, d.Daemon, "recovery: finishing a removal cut short by a crash")
			}
			if strings.Contains(d.Log(), "cannot be read") {
				t.Errorf("the restarted daemon complained about a record")
			}
			d.MustCLI(t, "rm", "bystander")
		})
	}
}

// countDirs counts the entries of dir.
func countDirs(dir string) int {
	ents, _ := os.ReadDir(dir)
	return len(ents)
}

// The reproduction, with no crash point: kill -9 while 20 `run -d`
// are under way, early (most are half created) and later (most have a
// shim). Whatever the moment: a run that answered is running, every
// running container works, and the rest is consistent.
func TestCrashDuringParallelRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready func(d *Daemon) bool
	}{
		{"early", func(d *Daemon) bool { return countDirs(filepath.Join(d.Root, "containers")) >= 3 }},
		{"after-10-shims", func(d *Daemon) bool { return countDirs(filepath.Join(d.ExecRoot, "containers")) >= 10 }},
		{"after-5-ran", func(d *Daemon) bool {
			logs, _ := filepath.Glob(filepath.Join(d.Root, "containers", "*", "*-json.log"))
			ran := 0
			for _, l := range logs {
				if fi, err := os.Stat(l); err == nil && fi.Size() > 0 {
					ran++
				}
			}
			return ran >= 5
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDaemon(t)
			d.Start(t)
			defer d.Cleanup(t)
			loadBusybox(t, d)
			const n = 20
			results := make(chan Result, n)
			for range n {
				go func() { results <- d.CLI("run", "-d", "busybox", "sh", "-c", "echo up; sleep 60") }()
			}
			deadline := time.Now().Add(30 * time.Second)
			for !tc.ready(d) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			d.Kill(t)
			var answered []string
			for range n {
				select {
				case r := <-results:
					if r.Code == 0 {
						answered = append(answered, remember(r.Stdout))
					}
				case <-time.After(60 * time.Second):
					t.Fatal("a run -d did not return after the kill")
				}
			}
			known := idsOnDisk(d)
			for id := range known {
				remember(id)
			}
			d.Start(t)
			all, running := containerIDs(t, d, true), containerIDs(t, d, false)
			t.Logf("killed with %d IDs on disk, %d runs answered; after the restart %d listed, %d running",
				len(known), len(answered), len(all), len(running))
			for _, id := range answered {
				if !running[id] {
					t.Errorf("run -d answered %s, which is not running after the restart", id[:12])
				}
			}
			for id := range running {
				if r := d.CLI("exec", id, "true"); r.Code != 0 {
					t.Errorf("exec in running %s: %s", id[:12], r)
				}
			}
			checkConsistent(t, d, known)
			for id := range all {
				if !running[id] {
					if r := d.CLI("start", id); r.Code != 0 {
						t.Errorf("start of recovered %s: %s", id[:12], r)
					}
					break // one is enough
				}
			}
		})
	}
}
