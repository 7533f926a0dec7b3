package shim

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
)

// fakeHost stands in for libcontainer: each container "runs" until the
// test ends it.
type fakeHost struct {
	mu    sync.Mutex
	gones map[string]func()
	files map[string][]byte // what the first descriptor sent held
}

func (h *fakeHost) host(req shimproto.CreateRequest, files []*os.File, gone func()) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gones[req.ID] = gone
	if len(files) > 0 {
		b, _ := io.ReadAll(files[0])
		h.files[req.ID] = b
	}
	return 4242, nil
}

// end makes the container id exit.
func (h *fakeHost) end(id string) {
	h.mu.Lock()
	gone := h.gones[id]
	delete(h.gones, id)
	h.mu.Unlock()
	gone()
}

func newTestGroup(t *testing.T, max int) (*group, *fakeHost, chan struct{}) {
	t.Helper()
	dir := t.TempDir()
	g := newGroup(dir, max)
	h := &fakeHost{gones: map[string]func(){}, files: map[string][]byte{}}
	g.host = h.host
	exited := make(chan struct{})
	var once sync.Once
	g.exit = func() {
		once.Do(func() { close(exited) })
	}
	if err := g.listen(); err != nil {
		t.Fatal(err)
	}
	go g.serve()
	t.Cleanup(func() {
		g.mu.Lock()
		g.closeLocked()
		g.mu.Unlock()
	})
	return g, h, exited
}

func create(t *testing.T, g *group, id string, files ...*os.File) shimproto.Response {
	t.Helper()
	dir := filepath.Join("/run/test-containers", id)
	resp, err := shimproto.CallCreate(g.dir, shimproto.Request{Op: shimproto.OpCreate, Create: &shimproto.CreateRequest{Dir: dir, ID: id}}, files, time.Now().Add(5*time.Second))
	if err == nil {
		err = resp.Err()
	}
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	return resp
}

func exitedNow(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Two containers in one shim: the shim stays while either runs, and
// exits after the last is gone, not before.
func TestGroupTwoContainersExitAfterLast(t *testing.T) {
	g, h, exited := newTestGroup(t, 4)
	if r := create(t, g, "a"); r.Refused || r.Pid != 4242 {
		t.Fatalf("a: %+v", r)
	}
	if r := create(t, g, "b"); r.Refused {
		t.Fatalf("b: %+v", r)
	}
	h.end("a")
	if exitedNow(exited) {
		t.Fatal("the shim exited with b still running")
	}
	// Still taking containers after one of two is gone.
	if r := create(t, g, "c"); r.Refused {
		t.Fatalf("c: %+v", r)
	}
	h.end("b")
	h.end("c")
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the shim did not exit after its last container")
	}
}

// Once the shim has decided to exit, it takes no container: the daemon
// gets a refusal or cannot connect, never a container in a dying shim.
func TestGroupRefusesAfterDecidingToExit(t *testing.T) {
	g, h, exited := newTestGroup(t, 4)
	create(t, g, "a")
	h.end("a")
	<-exited
	if g.admit() {
		t.Fatal("a shim that decided to exit admitted a container")
	}
	resp, err := shimproto.CallCreate(g.dir, shimproto.Request{Op: shimproto.OpCreate, Create: &shimproto.CreateRequest{Dir: "/run/x/b", ID: "b"}}, nil, time.Now().Add(2*time.Second))
	if err == nil && !resp.Refused {
		t.Fatalf("create after the decision: %+v", resp)
	}
}

// A full shim refuses; one with room again takes containers.
func TestGroupFull(t *testing.T) {
	g, h, _ := newTestGroup(t, 2)
	create(t, g, "a")
	create(t, g, "b")
	if r := create(t, g, "c"); !r.Refused {
		t.Fatalf("a full shim took c: %+v", r)
	}
	h.end("a")
	if r := create(t, g, "d"); r.Refused {
		t.Fatalf("d refused with room: %+v", r)
	}
}

// A shim never given a container ends by itself.
func TestGroupIdleExit(t *testing.T) {
	g, _, exited := newTestGroup(t, 2)
	g.exitIfIdle()
	if !exitedNow(exited) {
		t.Fatal("an idle shim stayed")
	}
	if g.admit() {
		t.Fatal("an idle shim that exited admitted a container")
	}
}

// A create carries descriptors for the container's first process.
func TestGroupCreateCarriesDescriptors(t *testing.T) {
	g, h, _ := newTestGroup(t, 2)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("activation"))
	w.Close()
	defer r.Close()
	create(t, g, "a", r)
	h.mu.Lock()
	got := string(h.files["a"])
	h.mu.Unlock()
	if got != "activation" {
		t.Fatalf("the host read %q from the descriptor", got)
	}
}

// Requests naming a container outside its own directory are refused.
func TestGroupBadRequest(t *testing.T) {
	g, _, _ := newTestGroup(t, 2)
	for _, c := range []shimproto.CreateRequest{{Dir: "/run/x/a", ID: "b"}, {Dir: "run/a", ID: "a"}, {Dir: "/run/../a", ID: "a"}, {Dir: "/run/x/..", ID: ".."}} {
		resp, err := shimproto.CallCreate(g.dir, shimproto.Request{Op: shimproto.OpCreate, Create: &c}, nil, time.Now().Add(2*time.Second))
		if err == nil && resp.Err() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if g.hosted != 0 {
		t.Fatalf("bad requests counted: %d", g.hosted)
	}
}

// A retired shim (a new daemon started) takes no more containers: with
// none it exits at once, else after its last.
func TestGroupRetire(t *testing.T) {
	g, _, exited := newTestGroup(t, 4)
	if err := shimproto.Retire(g.dir, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a retired shim hosting nothing stayed")
	}

	g, h, exited := newTestGroup(t, 4)
	create(t, g, "a")
	if err := shimproto.Retire(g.dir, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if exitedNow(exited) {
		t.Fatal("a retired shim exited with a running container")
	}
	if g.admit() {
		t.Fatal("a retired shim admitted a container")
	}
	h.end("a")
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a retired shim stayed after its last container")
	}
}
