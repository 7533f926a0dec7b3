package container

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/notifymsg"
)

// The --sdnotify modes, Podman's: what `docker run`, started by a
// Type=notify unit (with $NOTIFY_SOCKET), tells the unit.
const (
	// sdnotifyContainer relays the container's own notifications (the
	// daemon's `sdnotify` events) with MAINPID= the CLI's pid; the
	// container gets a notify socket even without systemd in it.
	sdnotifyContainer = "container"
	// sdnotifyConmon says READY=1 once the container has started.
	sdnotifyConmon = "conmon"
	// sdnotifyHealthy says READY=1 once the container is healthy.
	sdnotifyHealthy = "healthy"
	// sdnotifyIgnore tells the unit nothing.
	sdnotifyIgnore = "ignore"
)

// checkSdnotifyMode refuses a mode that is not one of the four.
func checkSdnotifyMode(mode string) error {
	switch mode {
	case "", sdnotifyContainer, sdnotifyConmon, sdnotifyHealthy, sdnotifyIgnore:
		return nil
	}
	return errdefs.InvalidParameter(fmt.Errorf("invalid --sdnotify %q: must be container, conmon, healthy or ignore", mode))
}

// notifyRelay tells the unit that started the CLI ($NOTIFY_SOCKET) what
// the mode says, with MAINPID= the CLI's own pid: systemd's main process
// of the unit is the CLI, which stays until the container ends.
type notifyRelay struct {
	mode   string
	socket string
	pid    int

	mu    sync.Mutex
	ready bool
}

// newNotifyRelay is nil when there is nothing to tell: no $NOTIFY_SOCKET,
// or the ignore mode. Without --sdnotify the mode is conmon, Podman's
// default.
func newNotifyRelay(mode string) *notifyRelay {
	sock := os.Getenv("NOTIFY_SOCKET")
	if mode == "" {
		mode = sdnotifyConmon
	}
	if sock == "" || mode == sdnotifyIgnore {
		return nil
	}
	return &notifyRelay{mode: mode, socket: sock, pid: os.Getpid()}
}

// send writes one notification to the unit's socket.
func (r *notifyRelay) send(m notifymsg.Message) {
	text := m.Format(r.pid)
	name := r.socket
	if name[0] == '@' {
		name = "\x00" + name[1:] // an abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		slog.Debug("sdnotify: dial", "socket", r.socket, "err", err)
		return
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(text)); err != nil {
		slog.Debug("sdnotify: send", "socket", r.socket, "err", err)
	}
	if m.Ready {
		r.mu.Lock()
		r.ready = true
		r.mu.Unlock()
	}
}

// watch subscribes, before the start, to what the mode waits for, and
// relays it until ctx ends. since is a moment before the start, so that
// nothing the container says right after it is lost.
func (r *notifyRelay) watch(ctx context.Context, c *client.Client, id string, since time.Time) {
	if r == nil || (r.mode != sdnotifyContainer && r.mode != sdnotifyHealthy) {
		return
	}
	f := filters.NewArgs(filters.Arg("type", "container"), filters.Arg("container", id))
	if r.mode == sdnotifyContainer {
		f.Add("event", "sdnotify")
	} else {
		f.Add("event", "health_status")
	}
	msgs, errs := c.Events(ctx, events.ListOptions{
		Since:   fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
		Filters: f,
	})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-errs:
				if ctx.Err() == nil {
					slog.Warn("sdnotify: the daemon's events ended", "err", err)
				}
				return
			case e := <-msgs:
				r.relay(e)
			}
		}
	}()
}

func (r *notifyRelay) relay(e events.Message) {
	switch r.mode {
	case sdnotifyContainer:
		m := notifymsg.FromAttributes(e.Actor.Attributes)
		m.MainPID = 0 // the container's own pid means nothing to the unit
		r.send(m)
	case sdnotifyHealthy:
		if strings.TrimSpace(strings.TrimPrefix(string(e.Action), "health_status:")) == "healthy" && !r.isReady() {
			r.send(notifymsg.Message{Ready: true})
		}
	}
}

func (r *notifyRelay) isReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

// started is called once the container runs.
func (r *notifyRelay) started() {
	if r == nil {
		return
	}
	if r.mode == sdnotifyConmon {
		r.send(notifymsg.Message{Ready: true})
		return
	}
	// The unit learns its main pid at once; READY=1 comes later.
	r.send(notifymsg.Message{})
}

// stopping is called when the unit stops the CLI: the CLI says it in
// every mode, since a container's systemd need not (252 does not).
func (r *notifyRelay) stopping() {
	if r != nil {
		r.send(notifymsg.Message{Stopping: true})
	}
}
