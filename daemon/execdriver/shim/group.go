package shim

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/pkg/errdefs"
)

// idleTimeout is how long a shim waits for its first container: the
// daemon hands it one right after it reported ready, unless the daemon
// died in between, and then nobody ever will.
const idleTimeout = 30 * time.Second

// group is the shim process's side of hosting several containers: the
// group socket that takes OpCreate, the count of containers hosted (or
// being created), and the decision to exit. Each container is otherwise
// on its own (its shim value, state directory, control socket, log).
//
// The handshake: a create is admitted (counted) or refused under mu, and
// the shim decides to exit under mu when the count falls to zero. Once it
// has decided, every create is refused and the socket closed; so no
// container is ever handed to a shim that is on its way out: the daemon
// gets Refused (or cannot connect) and starts another shim.
type group struct {
	dir string
	max int
	// host creates one container and returns its init's pid; it calls
	// gone once the container is gone from the shim (not if it failed).
	host func(req shimproto.CreateRequest, files []*os.File, gone func()) (int, error)
	// exit ends the process; called once, after the last container.
	exit func()

	mu       sync.Mutex
	n        int  // containers hosted or being created
	hosted   int  // containers ever admitted
	closing  bool // retired or exiting: refuse every create
	exiting  bool // exit was decided (once)
	listener *net.UnixListener
}

func newGroup(dir string, max int) *group {
	return &group{dir: dir, max: max}
}

// listen opens the group socket and arms the idle timeout.
func (g *group) listen() error {
	l, err := shimproto.Listen(g.dir, shimproto.GroupSocketName)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.listener = l
	g.mu.Unlock()
	if err := shimproto.WriteFileQuick(filepath.Join(g.dir, shimproto.ShimPidFile), []byte(fmt.Sprintf("%d\n", os.Getpid()))); err != nil {
		l.Close()
		return err
	}
	time.AfterFunc(idleTimeout, g.exitIfIdle)
	return nil
}

// serve accepts create requests until the shim decided to exit.
func (g *group) serve() {
	for {
		conn, err := g.listener.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				slog.Error("shim: accept on the group socket", "err", err)
			}
			return
		}
		go g.handle(conn)
	}
}

// validContainerID is what the daemon's driver accepts; compiled at first
// use, not at every start of this binary (it is also every exec's init).
var validContainerID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_+\-][A-Za-z0-9_+\-.]*$`)
})

func (g *group) handle(conn *net.UnixConn) {
	defer conn.Close()
	req, files, err := shimproto.ReadCreate(conn)
	if err != nil {
		slog.Debug("shim: bad request on the group socket", "err", err)
		return
	}
	// The descriptors are the first process's: libcontainer hands that
	// process its own copies at start, so ours go once create returned.
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	reply := func(r shimproto.Response) { _ = shimproto.WriteJSONLine(conn, r) }
	if req.Op == shimproto.OpRetire && len(files) == 0 {
		// Closed before the acknowledgement: a daemon told "retired"
		// never has a create admitted here afterwards.
		exitNow := g.retire()
		reply(shimproto.Response{})
		if exitNow {
			slog.Info("shim: retired by a new daemon with no container; exiting")
			g.exit()
		}
		return
	}
	if req.Op != shimproto.OpCreate || req.Create == nil {
		reply(shimproto.ErrResponse(errdefs.InvalidParameter(fmt.Errorf("the group socket takes only %s and %s, not %q", shimproto.OpCreate, shimproto.OpRetire, req.Op))))
		return
	}
	c := *req.Create
	if !validContainerID().MatchString(c.ID) || !filepath.IsAbs(c.Dir) || filepath.Clean(c.Dir) != c.Dir || filepath.Base(c.Dir) != c.ID {
		reply(shimproto.ErrResponse(errdefs.InvalidParameter(fmt.Errorf("bad container %q in %q", c.ID, c.Dir))))
		return
	}
	if !g.admit() {
		reply(shimproto.Response{Refused: true})
		return
	}
	pid, err := g.host(c, files, g.release)
	if err != nil {
		reply(shimproto.ErrResponse(err))
		g.release()
		return
	}
	if err := shimproto.WriteJSONLine(conn, shimproto.Response{Pid: pid}); err != nil {
		// Whoever asked is gone (a daemon killed mid-create): nobody
		// will start, record or delete this container, so it is undone
		// here. Its init is our child, waiting to be let run; once it
		// is killed the container's run ends and releases it.
		slog.Warn("shim: the daemon did not take the created container; removing it", "id", c.ID, "err", err)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// admit counts one more container unless the shim is full or exiting.
func (g *group) admit() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing || g.n >= g.max {
		return false
	}
	g.n++
	g.hosted++
	return true
}

// release counts a container gone (or whose create failed); the last one
// makes the shim exit.
func (g *group) release() {
	g.mu.Lock()
	g.n--
	last := g.n == 0 && !g.exiting
	if last {
		g.closeLocked()
		g.exiting = true
	}
	g.mu.Unlock()
	if last {
		g.exit()
	}
}

// retire refuses every create from now on. It reports whether the shim
// hosts nothing and so must exit now (the caller exits once it has
// answered); else the shim exits after its last container (release).
func (g *group) retire() (exitNow bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeLocked()
	exitNow = g.n == 0 && !g.exiting
	g.exiting = g.exiting || exitNow
	return exitNow
}

// exitIfIdle ends a shim that was never given a container.
func (g *group) exitIfIdle() {
	g.mu.Lock()
	idle := g.hosted == 0 && !g.exiting
	if idle {
		g.closeLocked()
		g.exiting = true
	}
	g.mu.Unlock()
	if idle {
		slog.Warn("shim: no container came; exiting", "after", idleTimeout)
		g.exit()
	}
}

// closeLocked closes the group socket: from here on creates are refused.
func (g *group) closeLocked() {
	g.closing = true
	if g.listener != nil {
		g.listener.Close()
	}
}
