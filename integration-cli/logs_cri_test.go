//go:build integration

package integrationcli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criRecord is a line of a CRI log as the kubelet parses it.
var criRecord = regexp.MustCompile(`^(\S+) (stdout|stderr) ([PF]) (.*)$`)

// criLines reads a CRI log file, checking every line's format; each
// returned entry is "stream tag content".
func criLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := criRecord.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("%s: not a CRI record: %q", path, sc.Text())
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			t.Fatalf("%s: time %q: %v", path, m[1], err)
		}
		out = append(out, m[2]+" "+m[3]+" "+m[4])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The cri log driver end to end: the shim writes the kubelet's format to
// the given path (its directories made), and docker logs reads it back.
func TestLogsCRIDriver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods", "ns_pod_uid", "ctr", "x.log")
	long := 20000 // > 16 KiB: one P piece and an F
	id := remember(shared.MustCLI(t, "run", "-d", "--log-driver", "cri", "--log-opt", "path="+path, "busybox", "sh", "-c",
		fmt.Sprintf(`echo out1; echo err1 >&2; echo; echo out2; head -c %d /dev/zero | tr '\000' a; echo; printf unfinished`, long)))
	defer shared.CLI("rm", "-f", id)
	if code := shared.MustCLI(t, "wait", id); code != "0" {
		t.Fatalf("exit %s", code)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	got := criLines(t, path)
	var stdout []string
	for _, l := range got {
		if strings.HasPrefix(l, "stderr ") {
			if l != "stderr F err1" {
				t.Errorf("stderr record %q", l)
			}
			continue
		}
		stdout = append(stdout, l)
	}
	as := strings.Repeat("a", 16*1024)
	want := []string{"stdout F out1", "stdout F ", "stdout F out2", "stdout P " + as,
		"stdout F " + strings.Repeat("a", long-16*1024), "stdout P unfinished"}
	if strings.Join(stdout, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout records:\n%.400q\nwant\n%.400q", stdout, want)
	}
	if len(got) != len(want)+1 {
		t.Errorf("%d records, want %d", len(got), len(want)+1)
	}

	r := shared.CLI("logs", id)
	if wantOut := "out1\n\nout2\n" + strings.Repeat("a", long) + "\nunfinished"; r.Code != 0 || r.Stdout != wantOut || r.Stderr != "err1\n" {
		t.Errorf("logs: code %d, stdout %.80q (%d bytes), stderr %q", r.Code, r.Stdout, len(r.Stdout), r.Stderr)
	}
	if out := shared.MustCLI(t, "logs", "--tail", "1", id); out != "unfinished" {
		t.Errorf("--tail 1: %.80q", out)
	}
	// -t shows the record's time, the long line's pieces as one line.
	out := shared.MustCLI(t, "logs", "-t", "--tail", "2", id)
	lines := strings.Split(out, "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " "+strings.Repeat("a", long)) {
		t.Errorf("-t --tail 2: %d lines, %.80q", len(lines), out)
	}

	for _, tc := range []struct {
		opts []string
		want string
	}{
		{nil, "'path' is required"},
		{[]string{"--log-opt", "path=rel/x.log"}, "must be absolute"},
		{[]string{"--log-opt", "path=/tmp/x.log", "--log-opt", "max-size=1m"}, "unknown log opt 'max-size' for cri log driver"},
	} {
		args := append(append([]string{"create", "--log-driver", "cri"}, tc.opts...), "busybox", "true")
		if r := shared.CLI(args...); r.Code == 0 || !strings.Contains(r.Stderr, tc.want) {
			if r.Code == 0 {
				shared.CLI("rm", "-f", strings.TrimSpace(r.Stdout))
			}
			t.Errorf("%v: %s", tc.opts, r)
		}
	}
}

// ReopenContainerLog through the CRI socket, after a rename as the
// kubelet's rotation does: the output goes on in a new file at the path,
// with no line lost or repeated. A container whose driver cannot reopen
// answers Unimplemented, a stopped one FailedPrecondition.
func TestLogsCRIReopen(t *testing.T) {
	d := NewDaemon(t)
	criSock := filepath.Join(d.Dir, "cri.sock")
	cniDir := filepath.Join(d.Dir, "cni")
	d.Args = append(d.Args, "--cri-socket", criSock, "--cni-conf-dir", cniDir)
	d.Start(t)
	t.Cleanup(func() { d.Cleanup(t) })
	loadBusybox(t, d)

	conn, err := grpc.NewClient("unix://"+criSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reopen := func(id string) error {
		_, err := rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
		return err
	}

	// The CRI serves the containers it marked as a pod's: a plain run
	// with that mark stands in for a pod's container here.
	const podLabel = "io.sdengine.cri.sandbox=test"
	path := filepath.Join(d.Dir, "pods", "ctr", "0.log")
	id := d.MustCLI(t, "run", "-d", "--label", podLabel, "--log-driver", "cri", "--log-opt", "path="+path, "busybox", "sh", "-c",
		`i=0; while [ $i -lt 400 ]; do echo line$i; i=$((i+1)); sleep 0.01; done`)
	defer d.CLI("rm", "-f", id)

	waitFor(t, func() bool { b, _ := os.ReadFile(path); return strings.Count(string(b), "\n") >= 20 })
	var files []string
	for i := range 3 {
		rotated := fmt.Sprintf("%s.%d", path, i)
		if err := os.Rename(path, rotated); err != nil {
			t.Fatal(err)
		}
		files = append(files, rotated)
		if err := reopen(id); err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("after reopen %d: %v", i, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	d.MustCLI(t, "wait", id)
	files = append(files, path)
	next := 0
	for _, f := range files {
		lines := criLines(t, f)
		t.Logf("%s: %d lines", filepath.Base(f), len(lines))
		if len(lines) == 0 {
			t.Errorf("%s is empty", f)
		}
		for _, l := range lines {
			n, err := strconv.Atoi(strings.TrimPrefix(l, "stdout F line"))
			if err != nil || n != next {
				t.Fatalf("%s: %q, want line%d", f, l, next)
			}
			next++
		}
	}
	if next != 400 {
		t.Fatalf("%d lines over %d files, want 400", next, len(files))
	}
	// docker logs reads the current file: the kubelet's rotated ones
	// are the kubelet's.
	if out := d.MustCLI(t, "logs", "--tail", "1", id); out != "line399" {
		t.Errorf("logs --tail 1: %q", out)
	}

	if err := reopen(id); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("reopen of a stopped container: %v", err)
	}
	jid := d.MustCLI(t, "run", "-d", "--label", podLabel, "busybox", "sleep", "60")
	defer d.CLI("rm", "-f", jid)
	if err := reopen(jid); status.Code(err) != codes.Unimplemented {
		t.Errorf("reopen of a json-file container: %v", err)
	}
	if err := reopen("nosuchcontainer"); status.Code(err) != codes.NotFound {
		t.Errorf("reopen of no container: %v", err)
	}
}
