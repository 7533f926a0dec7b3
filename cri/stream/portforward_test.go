package stream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// testNetNS makes a network namespace with its loopback up and a TCP
// server on 127.0.0.1:port in it that answers "name:<what it read until
// EOF>". It returns the namespace's path; the namespace lives on the
// thread of a goroutine that waits for the test's end, and goes with it.
func testNetNS(t *testing.T, port int, name string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	type made struct {
		path string
		l    net.Listener
		err  error
	}
	ready, end := make(chan made, 1), make(chan struct{})
	go func() {
		// Never unlocked: the thread ends with the goroutine, and the
		// namespace with its last user.
		goruntime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- made{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			ready <- made{err: fmt.Errorf("lo up: %w", err)}
			return
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		ready <- made{path: fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()), l: l, err: err}
		<-end
	}()
	m := <-ready
	if m.err != nil {
		t.Fatal(m.err)
	}
	go answer(m.l, name)
	t.Cleanup(func() {
		m.l.Close()
		close(end)
	})
	return m.path
}

// answer serves l: each connection is read to EOF and answered with
// "name:" and what was read; the answer's end is the connection's close.
func answer(l net.Listener, name string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			b, _ := io.ReadAll(c)
			fmt.Fprintf(c, "%s:%s", name, b)
		}()
	}
}

// pipeStream is the client's end as cri-streaming gives it: closing the
// client's writer is EOF on the stream's read side.
type pipeStream struct {
	io.Reader
	io.Writer
}

func (pipeStream) Close() error { return nil }

// forward runs a PortForward of send and returns what came back.
func forward(t *testing.T, r *runtime, port int, send string) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := r.PortForward(context.Background(), "pod", int32(port), pipeStream{inR, outW})
		outW.Close()
		errc <- err
	}()
	go func() {
		io.WriteString(inW, send)
		inW.Close()
	}()
	got, err := io.ReadAll(outR)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	return string(got)
}

// TestPortForwardNetNS: the same port on the host and in a pod's
// namespace are two servers; a port-forward reaches the pod's, or the
// host's for a pod without a namespace of its own (host network).
func TestPortForwardNetNS(t *testing.T) {
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go answer(host, "host")
	port := host.Addr().(*net.TCPAddr).Port
	path := testNetNS(t, port, "pod")

	r := &runtime{netns: func(id string) (string, error) { return path, nil }}
	if got := forward(t, r, port, "hello"); got != "pod:hello" {
		t.Errorf("pod netns: got %q, want %q", got, "pod:hello")
	}
	r.netns = func(id string) (string, error) { return "", nil }
	if got := forward(t, r, port, "hello"); got != "host:hello" {
		t.Errorf("host network: got %q, want %q", got, "host:hello")
	}

	// The dialing threads went with their goroutines: only the thread
	// that holds the namespace is in it.
	pod, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	// A thread ends a moment after its goroutine (later on a loaded
	// host): wait for it, bounded.
	var in int
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if in = threadsIn(t, pod); in == 1 || time.Now().After(deadline) {
			break
		}
	}
	if in != 1 {
		t.Errorf("%d threads in the pod's namespace %s, want 1 (the test's holder)", in, pod)
	}
}

// threadsIn counts this process's threads in network namespace ns.
func threadsIn(t *testing.T, ns string) int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		if l, _ := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net"); l == ns {
			n++
		}
	}
	return n
}

// TestPortForwardErrors: a closed port and an unknown pod are errors (which
// cri-streaming writes on the error stream), not hangs.
func TestPortForwardErrors(t *testing.T) {
	path := testNetNS(t, 1, "pod")
	r := &runtime{netns: func(id string) (string, error) { return path, nil }}
	// Port 2 has no server in the namespace.
	err := r.PortForward(context.Background(), "pod", 2, pipeStream{strings.NewReader(""), io.Discard})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("closed port: %v", err)
	}
	r.netns = func(id string) (string, error) { return "", fmt.Errorf("pod %s not found", id) }
	if err := r.PortForward(context.Background(), "nope", 1, pipeStream{strings.NewReader(""), io.Discard}); err == nil {
		t.Error("unknown pod: no error")
	}
}

// TestServerPortForward goes through the HTTP server as kubectl does: the
// URL handed out names the port bound for ":0", and a SPDY port-forward
// session on it reaches the pod's namespace.
func TestServerPortForward(t *testing.T) {
	port := 8080
	path := testNetNS(t, port, "pod")
	s, err := New("127.0.0.1:0", nil, func(id string) (string, error) {
		if id != "pod1" {
			return "", fmt.Errorf("pod %s not found", id)
		}
		return path, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()

	resp, err := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "pod1", Port: []int32{int32(port)}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + s.Addr().String() + "/portforward/"; !strings.HasPrefix(resp.Url, want) {
		t.Fatalf("URL %q does not start with %q", resp.Url, want)
	}
	conn := spdyDial(t, resp.Url, portforward.ProtocolV1Name)
	defer conn.Close()

	h := http.Header{}
	h.Set(portforward.StreamType, portforward.StreamTypeError)
	h.Set(portforward.PortHeader, strconv.Itoa(port))
	h.Set(portforward.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	errStream.Close() // the client only reads it
	h.Set(portforward.StreamType, portforward.StreamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(data, "over spdy")
	data.Close() // half-close: the pod's server reads EOF, then answers
	got, err := io.ReadAll(bufio.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "pod:over spdy" {
		t.Errorf("got %q", got)
	}
	msg, _ := io.ReadAll(errStream)
	if len(msg) > 0 {
		t.Errorf("error stream: %s", msg)
	}
}

// spdyDial opens a SPDY session on a streaming URL.
func spdyDial(t *testing.T, url, protocol string) httpstream.Connection {
	t.Helper()
	rt, err := spdy.NewRoundTripper(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(httpstream.HeaderProtocolVersion, protocol)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := rt.NewConnection(resp)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}
