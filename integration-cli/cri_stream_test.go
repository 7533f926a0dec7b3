//go:build integration

package integrationcli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// TestCRIStreamExecAttach drives exec and attach end to end: CRI Exec and
// Attach over gRPC hand out a URL of the streaming server, and a SPDY
// client (the protocol crictl and the kubelet speak) runs the session
// against a real container. Pod sandboxes are not needed for that: the
// containers are plain ones labelled as a pod's. Port-forward needs a
// pod's network namespace and is covered by cri/stream's tests.
func TestCRIStreamExecAttach(t *testing.T) {
	d := NewDaemon(t)
	sock := filepath.Join(d.Dir, "cri.sock")
	d.Args = append(d.Args, "--cri-socket", sock, "--cri-stream-address", "127.0.0.1:0")
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	rs := runtimeapi.NewRuntimeServiceClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const podLabel = "io.sdengine.cri.sandbox=nopod"
	id := d.MustCLI(t, "run", "-d", "--label", podLabel, "busybox", "sleep", "300")
	exec := func(t *testing.T, req *runtimeapi.ExecRequest, s session) result {
		t.Helper()
		req.ContainerId = id[:12] // the CRI takes a unique prefix too
		resp, err := rs.Exec(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return s.run(t, resp.Url)
	}

	t.Run("exit code and stderr", func(t *testing.T) {
		r := exec(t, &runtimeapi.ExecRequest{Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Stdout: true, Stderr: true},
			session{stdout: true, stderr: true})
		if r.stdout != "out\n" || r.stderr != "err\n" {
			t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
		}
		if r.exitCode() != "3" {
			t.Errorf("status %+v, want exit code 3", r.status)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		r := exec(t, &runtimeapi.ExecRequest{Cmd: []string{"cat"}, Stdin: true, Stdout: true},
			session{stdin: "through cat", stdout: true})
		if r.stdout != "through cat" || r.status.Status != "Success" {
			t.Errorf("stdout %q, status %+v", r.stdout, r.status)
		}
	})
	t.Run("tty and resize", func(t *testing.T) {
		// The size arrives as the process starts: it is applied once the
		// process exists, well within the sleep.
		r := exec(t, &runtimeapi.ExecRequest{Cmd: []string{"sh", "-c", "sleep 0.5; stty size"}, Stdout: true, Tty: true},
			session{stdout: true, tty: true, size: &termSize{Width: 100, Height: 40}})
		if strings.TrimSpace(r.stdout) != "40 100" || r.status.Status != "Success" {
			t.Errorf("stdout %q, status %+v", r.stdout, r.status)
		}
	})
	t.Run("command not found", func(t *testing.T) {
		r := exec(t, &runtimeapi.ExecRequest{Cmd: []string{"/no/such/cmd"}, Stdout: true, Stderr: true},
			session{stdout: true, stderr: true})
		if c := r.exitCode(); c != "126" && c != "127" {
			t.Errorf("status %+v, want exit code 126 or 127; stderr %q", r.status, r.stderr)
		}
	})

	t.Run("attach", func(t *testing.T) {
		// Waits for a line on stdin, answers it and exits: the attach
		// ends with the container's output.
		aid := d.MustCLI(t, "run", "-d", "-i", "--label", podLabel, "busybox", "sh", "-c", "read line; echo got-$line; echo bye >&2")
		resp, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: aid, Stdin: true, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatal(err)
		}
		r := session{stdin: "x\n", keepStdin: true, stdout: true, stderr: true}.run(t, resp.Url)
		if r.stdout != "got-x\n" || r.stderr != "bye\n" || r.status.Status != "Success" {
			t.Errorf("stdout %q, stderr %q, status %+v", r.stdout, r.stderr, r.status)
		}
	})
}

// session is the client's side of one exec or attach.
type session struct {
	stdin string
	// keepStdin leaves stdin open after sending (attach: a closed stdin
	// would close the container's).
	keepStdin      bool
	stdout, stderr bool
	tty            bool
	size           *termSize
}

type termSize struct{ Width, Height uint16 }

// result is what a session got: its output and the final status.
type result struct {
	stdout, stderr string
	status         struct {
		Status, Message, Reason string
		Details                 struct {
			Causes []struct{ Reason, Message string }
		}
	}
}

// exitCode is the exit code the status carries ("" for none).
func (r result) exitCode() string {
	for _, c := range r.status.Details.Causes {
		if c.Reason == "ExitCode" {
			return c.Message
		}
	}
	return ""
}

// run connects to url with protocol v4.channel.k8s.io, creates the
// streams the request asked for, and collects the output and status.
func (s session) run(t *testing.T, url string) result {
	t.Helper()
	rt, err := spdy.NewRoundTripper(nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(httpstream.HeaderProtocolVersion, "v4.channel.k8s.io")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := rt.NewConnection(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream := func(typ string) httpstream.Stream {
		h := http.Header{}
		h.Set("streamType", typ)
		st, err := conn.CreateStream(h)
		if err != nil {
			t.Fatalf("create %s stream: %v", typ, err)
		}
		return st
	}
	errStream := stream("error")
	errStream.Close() // read-only for the client
	var r result
	var wg sync.WaitGroup
	read := func(st httpstream.Stream, into *string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b bytes.Buffer
			io.Copy(&b, st)
			*into = b.String()
		}()
	}
	if s.stdin != "" {
		in := stream("stdin")
		io.WriteString(in, s.stdin)
		if !s.keepStdin {
			in.Close()
		}
	}
	if s.stdout {
		read(stream("stdout"), &r.stdout)
	}
	if s.stderr && !s.tty {
		read(stream("stderr"), &r.stderr)
	}
	if s.tty {
		rs := stream("resize")
		if s.size != nil {
			json.NewEncoder(rs).Encode(s.size)
		}
	}
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(errStream)
		done <- b
	}()
	select {
	case b := <-done:
		if err := json.Unmarshal(b, &r.status); err != nil {
			t.Fatalf("status %q: %v", b, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no status after 30s")
	}
	wg.Wait()
	return r
}
