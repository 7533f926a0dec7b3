package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	buildrouter "github.com/sdengine/engine/api/server/router/build"
	containerrouter "github.com/sdengine/engine/api/server/router/container"
	imagerouter "github.com/sdengine/engine/api/server/router/image"
)

// bodyRouter has one route of each body class: the JSON ones decode the
// body, the stream one counts it.
type bodyRouter struct{ calls atomic.Int32 }

func (b *bodyRouter) decode(_ context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	b.calls.Add(1)
	var v map[string]any
	if err := httputils.ReadJSON(r, &v, false); err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, map[string]int{"keys": len(v)})
}

func (b *bodyRouter) count(_ context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	b.calls.Add(1)
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, map[string]int64{"bytes": n})
}

func (b *bodyRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodPost, Path: "/config", Handler: b.decode, Body: router.BodyConfig},
		{Method: http.MethodPost, Path: "/small", Handler: b.decode},
		{Method: http.MethodPost, Path: "/stream", Handler: b.count, Body: router.BodyStream},
	}
}

func testLimits() Limits {
	l := DefaultLimits()
	l.Body = map[router.BodyClass]int64{router.BodySmall: 16 << 10, router.BodyConfig: 64 << 10}
	return l
}

// jsonBody is a JSON object of exactly n bytes: {"a":"xxx...x"}.
func jsonBody(n int) io.Reader {
	const head, tail = `{"a":"`, `"}`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(repeat('x'), int64(n-len(head)-len(tail))), strings.NewReader(tail))
}

type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// post sends body; size -1 sends it chunked.
func post(t *testing.T, url string, body io.Reader, size int64) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return resp.StatusCode, string(b)
}

func TestBodyLimitPerRouteClass(t *testing.T) {
	br := &bodyRouter{}
	ts := httptest.NewServer(newServer(testLimits(), br).Handler())
	defer ts.Close()
	const huge = 100 << 20
	for _, c := range []struct {
		name, path string
		body       io.Reader
		size       int64
		status     int
		calls      int32 // handler calls expected
	}{
		{"declared too large: refused unread", "/config", repeat(' '), huge, 413, 0},
		{"chunked too large", "/config", repeat(' '), -1, 413, 1},
		{"at the limit", "/config", jsonBody(64 << 10), 64 << 10, 200, 1},
		{"at the limit, chunked", "/config", jsonBody(64 << 10), -1, 200, 1},
		{"one byte over", "/config", jsonBody(64<<10 + 1), -1, 413, 1},
		{"a value, then too much", "/config", io.MultiReader(strings.NewReader(`{}`), io.LimitReader(repeat(' '), huge)), -1, 413, 1},
		{"small route", "/small", jsonBody(32 << 10), -1, 413, 1},
		{"small route, declared", "/small", jsonBody(32 << 10), 32 << 10, 413, 0},
		{"small route, small body", "/small", jsonBody(1 << 10), 1 << 10, 200, 1},
		{"the version prefix too", "/v1.51/config", repeat(' '), huge, 413, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := br.calls.Load()
			status, body := post(t, ts.URL+c.path, c.body, c.size)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			if got := br.calls.Load() - before; got != c.calls {
				t.Errorf("handler called %d times, want %d", got, c.calls)
			}
			if status == 413 {
				var m map[string]string
				if err := json.Unmarshal([]byte(body), &m); err != nil || len(m) != 1 || !strings.Contains(m["message"], "request body is too large") {
					t.Errorf("body %q is not {\"message\": \"request body is too large...\"}", body)
				}
			}
		})
	}
	// A stream is not limited.
	status, body := post(t, ts.URL+"/stream", io.LimitReader(repeat('x'), 20<<20), -1)
	if status != 200 || !strings.Contains(body, fmt.Sprint(20<<20)) {
		t.Errorf("stream: %d %s", status, body)
	}
}

func TestBodyLimitMessage(t *testing.T) {
	ts := httptest.NewServer(newServer(DefaultLimits(), &bodyRouter{}).Handler())
	defer ts.Close()
	_, body := post(t, ts.URL+"/v1.51/config", repeat(' '), 100<<20)
	if want := `{"message":"request body is too large: POST /v1.51/config takes at most 4 MiB"}` + "\n"; body != want {
		t.Errorf("got %q, want %q", body, want)
	}
}

// The engine's routes are in the right classes: a create or exec body is
// a configuration, an image import or load a stream, an unimplemented
// endpoint answers 501 whatever its body.
func TestRouteBodyClasses(t *testing.T) {
	want := map[string]router.BodyClass{
		"POST /containers/create":          router.BodyConfig,
		"POST /containers/{name:.*}/exec":  router.BodyConfig,
		"POST /exec/{id:.*}/start":         router.BodySmall,
		"POST /containers/{name:.*}/start": router.BodySmall,
		"POST /images/create":              router.BodyStream,
		"POST /images/load":                router.BodyStream,
		"POST /build":                      router.BodyStream,
		"POST /commit":                     router.BodyConfig,
	}
	for _, rt := range []router.Router{containerrouter.New(nil), imagerouter.New(nil), buildrouter.New(nil)} {
		for _, r := range rt.Routes() {
			k := r.Method + " " + r.Path
			if c, ok := want[k]; ok {
				if r.Body != c {
					t.Errorf("%s: class %d, want %d", k, r.Body, c)
				}
				delete(want, k)
			}
		}
	}
	for k := range want {
		t.Errorf("no route %s", k)
	}
	ts := httptest.NewServer(New(containerrouter.New(nil)).Handler())
	defer ts.Close()
	if status, body := post(t, ts.URL+"/v1.51/containers/create", repeat(' '), 100<<20); status != 413 {
		t.Errorf("create: %d %s", status, body)
	}
	if status, body := post(t, ts.URL+"/v1.51/build/prune", repeat(' '), 100<<20); status != 501 {
		t.Errorf("build prune: %d %s", status, body)
	}
}

// serveTCP serves s on a loopback port for the test's duration.
func serveTCP(t *testing.T, s *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return l.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the daemon closed c within d (a read
// returns EOF or a reset; anything else it sent is skipped).
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func get(t *testing.T, addr, path string, timeout time.Duration) error {
	t.Helper()
	cl := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func TestBodyStallTimesOut(t *testing.T) {
	l := testLimits()
	l.BodyStall = 300 * time.Millisecond
	addr := serveTCP(t, newServer(l, &bodyRouter{}))
	c := dial(t, addr)
	fmt.Fprint(c, "POST /config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "request body timed out") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Errorf("answered after %s, want about 300ms", d)
	}
	// The stall timer is the body's: once a body was read, a slow handler
	// or a kept-alive connection is not cut by it.
	slow := &slowRouter{d: 700 * time.Millisecond}
	addr = serveTCP(t, newServer(l, slow))
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/slow", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || slow.ctxErr.Load() != nil {
		t.Errorf("slow handler: %d, context %v", resp.StatusCode, slow.ctxErr.Load())
	}
}

// slowRouter decodes a small body, then takes its time.
type slowRouter struct {
	d      time.Duration
	ctxErr atomic.Pointer[error]
}

func (s *slowRouter) Routes() []router.Route {
	return []router.Route{{Method: http.MethodPost, Path: "/slow", Handler: func(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
		var v any
		if err := httputils.ReadJSON(r, &v, false); err != nil {
			return err
		}
		time.Sleep(s.d)
		if err := ctx.Err(); err != nil {
			s.ctxErr.Store(&err)
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}}}
}

func TestHeaderTimeoutClosesHalfOpenConnections(t *testing.T) {
	l := testLimits()
	l.ReadHeaderTimeout = 300 * time.Millisecond
	addr := serveTCP(t, newServer(l, fakeRouter{}))
	silent := dial(t, addr)
	partial := dial(t, addr)
	fmt.Fprint(partial, "GET /_ping HTTP/1.1\r\nHost: x\r\n")
	start := time.Now()
	if err := get(t, addr, "/_ping", 5*time.Second); err != nil {
		t.Fatalf("a normal client beside them: %v", err)
	}
	for name, c := range map[string]net.Conn{"silent": silent, "partial header": partial} {
		if !closedWithin(c, 5*time.Second) {
			t.Errorf("%s connection still open after 5s", name)
		}
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("closed after %s, before the header timeout", d)
	}
}

func TestPendingCapClosesTheOldestForANewcomer(t *testing.T) {
	l := testLimits()
	l.ReadHeaderTimeout = time.Minute
	l.MaxPending = 4
	l.EvictAfter = 100 * time.Millisecond
	addr := serveTCP(t, newServer(l, fakeRouter{}))
	var conns []net.Conn
	for i := 0; i < 12; i++ {
		conns = append(conns, dial(t, addr))
	}
	// Served although three times the cap are waiting silently.
	if err := get(t, addr, "/_ping", 10*time.Second); err != nil {
		t.Fatalf("a normal client: %v", err)
	}
	closed := 0
	for _, c := range conns {
		if closedWithin(c, 50*time.Millisecond) {
			closed++
		}
	}
	// All but the cap's worth, minus the one slot the client took and
	// left (and any accepted after it).
	if closed < len(conns)-l.MaxPending {
		t.Errorf("%d of %d silent connections closed, want at least %d", closed, len(conns), len(conns)-l.MaxPending)
	}
	if closed == len(conns) {
		t.Errorf("every silent connection was closed: the header timeout is a minute")
	}
}

func TestPendingCapMakesNewcomersWait(t *testing.T) {
	l := testLimits()
	l.ReadHeaderTimeout = time.Minute
	l.MaxPending = 2
	l.EvictAfter = time.Hour // never evict: wait
	s := newServer(l, fakeRouter{})
	addr := serveTCP(t, s)
	// Kept-alive connections that finished a request are not pending.
	keep := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < 3; i++ {
		resp, err := keep.Get("http://" + addr + "/_ping")
		if err != nil {
			t.Fatalf("request %d on a kept-alive connection: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	a, b := dial(t, addr), dial(t, addr)
	_ = b
	done := make(chan error, 1)
	go func() { done <- get(t, addr, "/_ping", 10*time.Second) }()
	select {
	case err := <-done:
		t.Fatalf("served beyond the cap (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	a.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not served once a slot freed")
	}
	// A hijacked connection leaves the pending set too.
	hj := &hijackRouter{}
	s2 := newServer(l, hj)
	addr2 := serveTCP(t, s2)
	for i := 0; i < 3; i++ {
		c := dial(t, addr2)
		fmt.Fprint(c, "POST /hijack HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		br := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "101") {
			t.Fatalf("hijack %d: %q %v", i, line, err)
		}
	}
}

// hijackRouter hijacks and holds the connection until the client goes.
type hijackRouter struct{}

func (hijackRouter) Routes() []router.Route {
	return []router.Route{{Method: http.MethodPost, Path: "/hijack", Handler: func(_ context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
		s, err := httputils.Hijack(w, r, true, nil)
		if err != nil {
			return err
		}
		go func() {
			select {
			case <-s.Gone():
			case <-time.After(10 * time.Second):
			}
			s.Close()
		}()
		return nil
	}}}
}

// A client still sending a refused body gets the 413, not a broken pipe:
// whether it keeps the connection alive (net/http half-closes and waits)
// or asks to close it (the server drains it a moment itself).
func TestRefusedBodyAnswerReachesTheClient(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(DefaultLimits(), &bodyRouter{})
	go s.Serve(l)
	defer s.Close(context.Background())
	for _, keepAlive := range []bool{true, false} {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DisableKeepAlives: !keepAlive,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}}
		for i := 0; i < 10; i++ {
			req, _ := http.NewRequest(http.MethodPost, "http://docker/config", io.LimitReader(repeat(' '), 100<<20))
			req.ContentLength = 100 << 20
			if i%2 == 1 {
				req.ContentLength = -1 // chunked
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("keep-alive %v, request %d: %v", keepAlive, i, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "request body is too large") {
				t.Fatalf("keep-alive %v, request %d: %d %s", keepAlive, i, resp.StatusCode, b)
			}
		}
	}
}
