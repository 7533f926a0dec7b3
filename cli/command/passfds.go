package command

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Inherited is what the CLI was started with beyond stdio: the run of
// open descriptors from 3 on, and socket activation's environment when it
// names this process. NoteInherited fills it in.
var Inherited struct {
	Open   int      // descriptors 3 .. 3+Open-1 are open
	Listen int      // LISTEN_FDS, when LISTEN_PID is this process
	Names  []string // LISTEN_FDNAMES, when one per LISTEN_FDS
}

// NoteInherited records the descriptors and socket activation the CLI
// was started with, and takes LISTEN_* out of its environment (as
// sd_listen_fds does), since they are meant for this process alone. main
// calls it first.
func NoteInherited() {
	// A descriptor that came through exec cannot be close-on-exec; the
	// Go runtime's own (it keeps the cgroup's CPU limit files open) all
	// are. So the run counts the open ones without the flag.
	n := 0
	for fd := 3; fd < 3+fdpass.MaxFiles; fd++ {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || fl&unix.FD_CLOEXEC != 0 {
			break
		}
		n++
	}
	Inherited.Open = n
	Inherited.Listen, Inherited.Names = 0, nil
	pid, lfds, names := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	for _, k := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		_ = os.Unsetenv(k)
	}
	if pid != strconv.Itoa(os.Getpid()) {
		return
	}
	if l, err := strconv.Atoi(lfds); err == nil && l > 0 {
		Inherited.Listen = l
		if ns := strings.Split(names, ":"); names != "" && len(ns) == l {
			Inherited.Names = ns
		}
	}
}

// PassPlan is what a start hands the container: the descriptors 3 ..
// 3+Files-1 of the CLI, of which the first Listen are socket activation's.
// The zero value passes nothing.
func PassPlan(preserveFds int) (fdpass.Request, error) {
	var r fdpass.Request
	if preserveFds < 0 {
		return r, errdefs.InvalidParameter(fmt.Errorf("invalid --preserve-fds %d", preserveFds))
	}
	r.Listen, r.Names = Inherited.Listen, Inherited.Names
	r.Files = max(preserveFds, r.Listen)
	if r.Files == 0 {
		return r, nil
	}
	if r.Listen > Inherited.Open {
		return r, errdefs.InvalidParameter(fmt.Errorf("LISTEN_FDS=%d, but only %d descriptors after stdio are open", r.Listen, Inherited.Open))
	}
	if preserveFds > Inherited.Open {
		return r, errdefs.InvalidParameter(fmt.Errorf("--preserve-fds %d: only %d descriptors after stdio are open", preserveFds, Inherited.Open))
	}
	return r, r.Validate()
}

// CheckCanPass fails, before anything starts, when the daemon is not
// reached over its unix socket: descriptors cannot cross a network.
func (c *Cli) CheckCanPass(r fdpass.Request) error {
	if r.Files == 0 {
		return nil
	}
	cl, err := c.Client()
	if err != nil {
		return err
	}
	if tc, _ := c.TLS.ClientConfig(); tc != nil || !strings.HasPrefix(cl.DaemonHost(), "unix://") {
		return errdefs.InvalidParameter(fmt.Errorf("cannot pass descriptors to the daemon at %s: %w", cl.DaemonHost(), fdpass.ErrNotUnix))
	}
	return nil
}

// StartWithFiles is POST /containers/{id}/start with this engine's
// extension (api/fdpass): the CLI's descriptors 3 .. 3+r.Files-1 go with
// the request, over a connection of its own.
func (c *Cli) StartWithFiles(ctx context.Context, id string, r fdpass.Request) error {
	if err := c.CheckCanPass(r); err != nil {
		return err
	}
	cl, err := c.Client()
	if err != nil {
		return err
	}
	cl.NegotiateAPIVersion(ctx)
	conn, err := cl.Dialer()(ctx)
	if err != nil {
		return fmt.Errorf("connecting to the daemon: %w", err)
	}
	defer conn.Close()
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return errdefs.InvalidParameter(fdpass.ErrNotUnix)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = uc.SetDeadline(dl)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://docker/v"+cl.ClientVersion()+"/containers/"+url.PathEscape(id)+"/start", http.NoBody)
	if err != nil {
		return err
	}
	r.Set(req.Header)
	req.Header.Set("User-Agent", "Docker-Client/sdengine")
	var head bytes.Buffer
	if err := req.Write(&head); err != nil {
		return err
	}
	fds := make([]int, r.Files)
	for i := range fds {
		fds[i] = 3 + i
	}
	// The descriptors ride on the request's first bytes; the daemon
	// keeps them for the request that reads them.
	if _, _, err := uc.WriteMsgUnix(head.Bytes(), unix.UnixRights(fds...), nil); err != nil {
		return fmt.Errorf("sending the start with descriptors: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(uc), req)
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotModified {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return daemonError(resp.StatusCode, body)
}
