package container

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"

	"github.com/sdengine/engine/pkg/notifymsg"
)

// unitSocket is a stand-in for systemd's notify socket.
func unitSocket(t *testing.T) (string, func() string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "n")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return path, func() string {
		t.Helper()
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			return ""
		}
		return string(buf[:n])
	}
}

func TestSdnotifyModes(t *testing.T) {
	for _, m := range []string{"", "container", "conmon", "healthy", "ignore"} {
		if err := checkSdnotifyMode(m); err != nil {
			t.Errorf("%q: %v", m, err)
		}
	}
	if err := checkSdnotifyMode("bogus"); err == nil || !strings.Contains(err.Error(), "container, conmon, healthy or ignore") {
		t.Errorf("bogus: %v", err)
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if newNotifyRelay("container") != nil {
		t.Error("a relay without NOTIFY_SOCKET")
	}
	t.Setenv("NOTIFY_SOCKET", "/x")
	if newNotifyRelay("ignore") != nil {
		t.Error("a relay in ignore mode")
	}
	if r := newNotifyRelay(""); r == nil || r.mode != "conmon" {
		t.Errorf("default mode: %+v", r)
	}
}

func TestSdnotifyRelay(t *testing.T) {
	path, recv := unitSocket(t)
	t.Setenv("NOTIFY_SOCKET", path)
	pid := fmt.Sprint(os.Getpid())

	r := newNotifyRelay("conmon")
	r.started()
	if got := recv(); got != "MAINPID="+pid+"\nREADY=1" {
		t.Errorf("conmon: %q", got)
	}
	r.stopping()
	if got := recv(); got != "MAINPID="+pid+"\nSTOPPING=1" {
		t.Errorf("conmon stop: %q", got)
	}

	r = newNotifyRelay("container")
	r.started()
	if got := recv(); got != "MAINPID="+pid {
		t.Errorf("container start: %q", got)
	}
	attrs := notifymsg.Message{Ready: true, Status: "up", HasStatus: true, MainPID: 1, WatchdogUsec: 5}.Attributes()
	attrs["name"] = "web"
	r.relay(events.Message{Action: "sdnotify", Actor: events.Actor{Attributes: attrs}})
	if got := recv(); got != "MAINPID="+pid+"\nSTATUS=up\nWATCHDOG_USEC=5\nREADY=1" {
		t.Errorf("container relay: %q", got)
	}
	r.stopping()
	if got := recv(); got != "MAINPID="+pid+"\nSTOPPING=1" {
		t.Errorf("container stop: %q", got)
	}

	r = newNotifyRelay("healthy")
	r.relay(events.Message{Action: "health_status: starting"})
	r.relay(events.Message{Action: "health_status: healthy"})
	if got := recv(); got != "MAINPID="+pid+"\nREADY=1" {
		t.Errorf("healthy: %q", got)
	}
	r.relay(events.Message{Action: "health_status: healthy"})
	if got := recv(); got != "" {
		t.Errorf("READY=1 twice: %q", got)
	}
}
