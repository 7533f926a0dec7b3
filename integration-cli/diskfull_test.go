//go:build integration

package integrationcli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Sizes of the two small file systems the disk-full test runs its daemon on.
const (
	diskfullDataSize = 24 << 20 // the data root: images, container records, json logs
	diskfullExecSize = 8 << 20  // the exec root: shims' state dirs (normally a tmpfs)
	// shimLogBound is what a shim's own log may take in all (shim.log and
	// its one rotated predecessor), daemon/execdriver/shim/shimlog.go.
	shimLogBound = 2 * 256 << 10
)

// A chatty container fills the data root; then the exec root is filled
// too. Through that: the json log gets no torn line, the chatty
// container's shim keeps its own log bounded, containers that exit 0 (one
// while the daemon runs, one while it is down) show exit code 0 after the
// daemon is killed and started again, and rm works.
func TestDiskFull(t *testing.T) {
	d := NewDaemon(t)
	dataDisk := mountTmpfs(t, filepath.Join(d.Dir, "data"), diskfullDataSize)
	execDisk := mountTmpfs(t, filepath.Join(d.Dir, "exec"), diskfullExecSize)
	d.Root, d.ExecRoot = filepath.Join(dataDisk, "root"), filepath.Join(execDisk, "run")
	setArg(d.Args, "--data-root", d.Root)
	setArg(d.Args, "--exec-root", d.ExecRoot)
	d.Start(t)
	defer func() {
		// Everything of the daemon's goes before the file systems under it.
		if ids := strings.Fields(d.CLI("ps", "-aq").Stdout); len(ids) > 0 {
			d.CLI(append([]string{"rm", "-f"}, ids...)...)
		}
		d.Stop(t)
		unmountTmpfs(t, execDisk)
		unmountTmpfs(t, dataDisk)
		d.Cleanup(t)
	}()
	loadBusybox(t, d)

	// Exits 0 on SIGTERM: one while the daemon runs, one while it is down.
	const exitOnTerm = `trap 'exit 0' TERM; echo ready; while :; do sleep 0.1; done`
	exiter := remember(d.MustCLI(t, "run", "-d", "--name", "exiter", "busybox", "sh", "-c", exitOnTerm))
	downExiter := remember(d.MustCLI(t, "run", "-d", "--name", "down-exiter", "busybox", "sh", "-c", exitOnTerm))
	for _, id := range []string{exiter, downExiter} {
		waitFor(t, func() bool { return strings.Contains(d.CLI("logs", id).Stdout, "ready") })
	}
	downPid, _ := strconv.Atoi(d.MustCLI(t, "inspect", "--format", "{{.State.Pid}}", downExiter))
	if downPid <= 0 {
		t.Fatal("no pid for down-exiter")
	}

	// 100-byte lines as fast as the shim takes them.
	chatty := remember(d.MustCLI(t, "run", "-d", "--name", "chatty", "busybox", "yes",
		strings.Repeat("x", 99)))
	start := time.Now()
	if !waitFull(dataDisk, 60*time.Second) {
		t.Fatalf("the data root did not fill up within 60s: %d bytes free", freeBytes(dataDisk))
	}
	t.Logf("data root (%d MiB) full after %s", diskfullDataSize>>20, time.Since(start).Round(10*time.Millisecond))

	// Phase 1: the data root is full, the exec root is not. The chatty
	// container's shim sees every log write fail.
	shimDir := filepath.Join(d.ExecRoot, "containers", chatty)
	before := shimLogSize(shimDir)
	const watch = 3 * time.Second
	time.Sleep(watch)
	after := shimLogSize(shimDir)
	t.Logf("chatty's shim log: %d bytes, grew %d bytes in %s of full disk", after, after-before, watch)
	if after > shimLogBound {
		t.Errorf("shim log is %d bytes, over its bound of %d", after, shimLogBound)
	}
	if grew := after - before; grew > 4<<10 {
		t.Errorf("shim log grew %d bytes in %s of failing log writes: not rate-limited", grew, watch)
	}
	shimLog := readShimLog(shimDir)
	if !strings.Contains(shimLog, "log write failed") || !strings.Contains(shimLog, "dropped_entries=") {
		t.Errorf("failing log writes were not reported in the shim log:\n%s", tail(shimLog, 2000))
	}
	t.Logf("chatty's shim log:\n%s", shimLog)

	// Phase 2: the exec root is full too.
	fillDisk(t, filepath.Join(d.ExecRoot, "filler"), diskfullExecSize)
	d.MustCLI(t, "kill", "-s", "TERM", exiter)
	waitFor(t, func() bool {
		return d.CLI("inspect", "--format", "{{.State.Status}}", exiter).Stdout == "exited\n"
	})
	if st := d.MustCLI(t, "inspect", "--format", "{{.State.ExitCode}} {{.State.Error}}", exiter); st != "0" {
		t.Errorf("exiter on a full disk: exit code and error %q, want 0", st)
	}
	d.Kill(t)
	if err := syscall.Kill(downPid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return syscall.Kill(downPid, 0) != nil })
	time.Sleep(500 * time.Millisecond) // for its shim to record the exit
	d.Start(t)
	d.Kill(t) // twice: the records written by the first restore must hold
	d.Start(t)
	for _, name := range []string{"exiter", "down-exiter"} {
		if st := d.MustCLI(t, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}} {{.State.Error}}", name); st != "exited 0" {
			t.Errorf("%s after daemon restarts on a full disk: %q, want \"exited 0\"", name, st)
		}
	}
	for _, bad := range []string{"container state lost", "save exited container", "recording exit status", "without exit status"} {
		if strings.Contains(d.Log(), bad) {
			t.Errorf("daemon log has %q:\n%s", bad, tail(d.Log(), 3000))
		}
	}
	if st := d.MustCLI(t, "inspect", "--format", "{{.State.Status}}", chatty); st != "running" {
		t.Errorf("chatty after the restarts: %q, want running", st)
	}

	// The json log has only whole lines, and `docker logs` reads it.
	d.MustCLI(t, "kill", chatty)
	waitFor(t, func() bool {
		return d.CLI("inspect", "--format", "{{.State.Status}}", chatty).Stdout == "exited\n"
	})
	lines, torn := checkJSONLog(t, filepath.Join(d.Root, "containers", chatty, chatty+"-json.log"))
	t.Logf("chatty's json log: %d lines, %d torn", lines, torn)
	if torn > 0 {
		t.Errorf("%d torn lines in the json log", torn)
	}
	// The kill can cut `yes` mid-line: its last entry is then a partial
	// one, printed without a newline, as Docker prints it.
	entries := func(out string) int {
		n := strings.Count(out, "\n")
		if out != "" && !strings.HasSuffix(out, "\n") {
			n++
		}
		return n
	}
	r := d.CLI("logs", "--tail", "3", chatty)
	if r.Code != 0 || entries(r.Stdout) != 3 {
		t.Errorf("docker logs --tail 3 on the full disk: %s", r)
	}
	if r := d.CLI("logs", chatty); r.Code != 0 || entries(r.Stdout) != lines {
		t.Errorf("docker logs on the full disk: exit %d, %d entries of %d; stderr: %s", r.Code, entries(r.Stdout), lines, r.Stderr)
	}

	// rm on the full disk.
	free := freeBytes(dataDisk)
	d.MustCLI(t, "rm", exiter, downExiter)
	d.MustCLI(t, "rm", chatty)
	if out := d.MustCLI(t, "ps", "-aq"); out != "" {
		t.Errorf("containers left after rm: %q", out)
	}
	t.Logf("rm on the full disk: %d bytes free before, %d after", free, freeBytes(dataDisk))
}

// mountTmpfs mounts a tmpfs of size bytes at dir.
func mountTmpfs(t *testing.T, dir string, size int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", dir, err)
	}
	return dir
}

func unmountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Unmount(dir, 0); err != nil {
		t.Errorf("unmount %s: %v", dir, err)
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
}

// setArg replaces the value of flag in args.
func setArg(args []string, flag, value string) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			args[i+1] = value
		}
	}
}

func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize
}

// waitFull waits until dir's file system has less than a page free.
func waitFull(dir string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if freeBytes(dir) < 4096 {
			return true
		}
	}
	return false
}

// fillDisk writes path until the file system is full (at most max bytes).
func fillDisk(t *testing.T, path string, max int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for n := 0; n < max; n += len(buf) {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%s: wrote %d bytes without filling the disk", path, max)
}

func shimLogSize(dir string) int64 {
	var n int64
	for _, name := range []string{"shim.log", "shim.log.1"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
			n += st.Size()
		}
	}
	return n
}

func readShimLog(dir string) string {
	old, _ := os.ReadFile(filepath.Join(dir, "shim.log.1"))
	cur, _ := os.ReadFile(filepath.Join(dir, "shim.log"))
	return string(old) + string(cur)
}

// checkJSONLog counts the lines of a json-file log and those that are not
// one whole entry.
func checkJSONLog(t *testing.T, path string) (lines, torn int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lines++
			var e struct{ Log, Stream, Time string }
			if line[len(line)-1] != '\n' || json.Unmarshal(line, &e) != nil || e.Stream == "" || e.Time == "" {
				torn++
				if torn <= 3 {
					t.Logf("torn line %d: %q", lines, tail(string(line), 300))
				}
			}
		}
		if err == io.EOF {
			return lines, torn
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
