package native

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/pkg/errdefs"
)

// DefaultShimGroupSize is how many containers one shim hosts at most
// unless the daemon is told otherwise (--shim-group-size): the figures
// behind it are in docs/shim.md ("Shim groups: where a shim's memory goes").
const DefaultShimGroupSize = 32

// shimGroup is a shim process this driver started: it hosts up to the
// group size of containers, each handed to it with OpCreate on its group
// socket. hosted counts those handed and not yet deleted (the shim counts
// those not yet exited, which is never more); refused marks a shim that
// turned one down, being full or on its way out, and gets no more.
type shimGroup struct {
	dir     string
	pid     int
	hosted  int
	refused bool
	reaped  chan struct{}
	exitErr error // how the shim ended; read once reaped is closed
}

// quitCheck is how long a create whose shim dropped the connection waits
// to see whether that shim exited by itself.
const quitCheck = time.Second

// quitCleanly reports whether g's shim exited by its own decision (status
// 0) within wait. A shim decides to exit only when it hosts nothing and
// refuses every create from then on, so a create it dropped unanswered
// (its connection still in the backlog when it closed its socket) was
// never taken: it can go to another shim.
func (g *shimGroup) quitCleanly(wait time.Duration) bool {
	select {
	case <-g.reaped:
		return g.exitErr == nil
	case <-time.After(wait):
		return false
	}
}

func (d *Driver) groupsDir() string { return filepath.Join(d.execRoot, "shims") }

// SetShimGroupSize sets how many containers one shim hosts at most; 1 is
// a shim per container. It applies to the shims started from then on.
func (d *Driver) SetShimGroupSize(n int) {
	d.groupMu.Lock()
	d.groupSize = max(n, 1)
	d.groupMu.Unlock()
}

// hostAttempts bounds how many shims a create tries: each refusal means a
// shim that was full or exiting, and the next try is a fresh shim.
const hostAttempts = 4

// host has a shim create the container whose state is in dir: a shim of
// ours with room, or a new one. files are passed to the container's
// first process (SCM_RIGHTS with the request).
func (d *Driver) host(ctx context.Context, id, dir string, files []*os.File) (shimproto.Response, error) {
	deadline := time.Now().Add(createTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	req := shimproto.Request{Op: shimproto.OpCreate, Create: &shimproto.CreateRequest{Dir: dir, ID: id}}
	for attempt := 0; ; attempt++ {
		g, err := d.pickGroup(ctx)
		if err != nil {
			return shimproto.Response{}, err
		}
		d.mu.Lock()
		d.hostedBy[id] = g
		d.mu.Unlock()
		resp, err := callCreate(ctx, g.dir, req, files, deadline)
		if err == nil && !resp.Refused {
			if err := resp.Err(); err != nil {
				// The shim's own account of the failure.
				d.unhost(id)
				return resp, err
			}
			return resp, nil
		}
		d.unhost(id)
		if err == nil || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || (ctx.Err() == nil && g.quitCleanly(quitCheck)) {
			// Full, or exiting (it may have closed its socket
			// already, or closed it with our request unread): no
			// more for this one.
			d.groupMu.Lock()
			g.refused = true
			d.groupMu.Unlock()
			if attempt+1 < hostAttempts {
				continue
			}
			return resp, errdefs.Unavailable(fmt.Errorf("no shim took container %s", id))
		}
		// The shim died creating it, or did not answer in time.
		return resp, fmt.Errorf("shim did not report: %w%s", err, shimLogTail(dir))
	}
}

// callCreate is shimproto.CallCreate, given up when ctx is done.
func callCreate(ctx context.Context, groupDir string, req shimproto.Request, files []*os.File, deadline time.Time) (shimproto.Response, error) {
	type result struct {
		resp shimproto.Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := shimproto.CallCreate(groupDir, req, files, deadline)
		ch <- result{resp, err}
	}()
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		// The shim may still create it: the caller's Delete kills it.
		return shimproto.Response{}, ctx.Err()
	}
}

// pickGroup returns a shim with room, starting one if none has.
func (d *Driver) pickGroup(ctx context.Context) (*shimGroup, error) {
	d.groupMu.Lock()
	defer d.groupMu.Unlock()
	for _, g := range d.groups {
		if !g.refused && g.hosted < d.groupSize {
			g.hosted++
			return g, nil
		}
	}
	g, err := d.spawnGroup(ctx)
	if err != nil {
		return nil, err
	}
	d.groups = append(d.groups, g)
	g.hosted++
	return g, nil
}

// unhost forgets that a shim of ours hosts id (it was deleted, or its
// create failed).
func (d *Driver) unhost(id string) {
	d.mu.Lock()
	g := d.hostedBy[id]
	delete(d.hostedBy, id)
	d.mu.Unlock()
	if g == nil {
		return
	}
	d.groupMu.Lock()
	g.hosted--
	d.groupMu.Unlock()
}

// spawnGroup starts a shim detached from us (own session, no stdio but
// the group's shim.log) and waits for its report on the ready pipe.
// Called with groupMu held.
func (d *Driver) spawnGroup(ctx context.Context) (*shimGroup, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	dir := filepath.Join(d.groupsDir(), hex.EncodeToString(rnd[:]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the shim's directory: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, shimproto.ShimLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(d.shimBinary, shimproto.ShimCommand, dir, d.runcRoot, strconv.Itoa(d.groupSize))
	cmd.Dir = dir
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{readyW} // fd 3 = shimproto.ReadyFd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting shim: %w", err)
	}
	g := &shimGroup{dir: dir, pid: cmd.Process.Pid, reaped: make(chan struct{})}
	go d.reapGroup(cmd, g)

	var resp shimproto.Response
	got := make(chan error, 1)
	go func() { got <- shimproto.ReadJSONLine(bufio.NewReader(readyR), &resp) }()
	ctx, cancel := context.WithTimeout(ctx, createTimeout)
	defer cancel()
	select {
	case err = <-got:
		if err == nil {
			err = resp.Err()
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = cmd.Process.Kill()
		<-g.reaped
		return nil, fmt.Errorf("shim did not start: %w%s", err, shimLogTail(dir))
	}
	slog.Debug("shim started", "pid", g.pid, "dir", dir, "group_size", d.groupSize)
	return g, nil
}

// reapGroup waits for a shim of ours and forgets it. A shim that exited
// by itself (its last container gone) leaves nothing worth keeping; one
// that died keeps its directory, for its log, until the next daemon
// start (tidyGroups).
func (d *Driver) reapGroup(cmd *exec.Cmd, g *shimGroup) {
	err := cmd.Wait()
	d.groupMu.Lock()
	for i, o := range d.groups {
		if o == g {
			d.groups = append(d.groups[:i], d.groups[i+1:]...)
			break
		}
	}
	d.groupMu.Unlock()
	if err == nil {
		_ = os.RemoveAll(g.dir)
	} else {
		slog.Warn("shim died", "pid", g.pid, "dir", g.dir, "err", err)
	}
	g.exitErr = err
	close(g.reaped)
}

// tidyGroups removes the directories of shims no longer running (those
// of an earlier daemon that ended, or died) and retires the live ones: they
// keep serving the containers they host and exit after the last, or at
// once if they host none (a daemon killed between starting a shim and
// handing it a container leaves such a shim).
func (d *Driver) tidyGroups() {
	ents, err := os.ReadDir(d.groupsDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		dir := filepath.Join(d.groupsDir(), e.Name())
		if !e.IsDir() {
			continue
		}
		if shimproto.LiveGroupPid(dir) == 0 {
			_ = os.RemoveAll(dir)
		} else if err := shimproto.Retire(dir, time.Now().Add(5*time.Second)); err != nil && !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			slog.Warn("retiring an earlier daemon's shim", "dir", dir, "err", err)
		}
	}
}
