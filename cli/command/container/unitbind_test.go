package container

import (
	"net"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sdengine/engine/pkg/unitbind"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestServiceToBind(t *testing.T) {
	const cg = "1:name=systemd:/system.slice/docker-container@web.service\n0::/system.slice/docker-container@web.service\n"
	service := map[string]string{"INVOCATION_ID": "0f1e2d3c4b5a69788796a5b4c3d2e1f0"}
	for _, tc := range []struct {
		name string
		e    unitEnv
		want string
	}{
		{"a service's process", unitEnv{getenv: envOf(service), procCgroup: cg, daemonHere: true}, "docker-container@web.service"},
		{"no INVOCATION_ID (a shell)", unitEnv{getenv: envOf(nil), procCgroup: cg, daemonHere: true}, ""},
		{"a daemon under another systemd", unitEnv{getenv: envOf(service), procCgroup: cg}, ""},
		{"a session scope", unitEnv{getenv: envOf(service), procCgroup: "0::/user.slice/user-0.slice/session-4.scope\n", daemonHere: true}, ""},
	} {
		if got := serviceToBind(tc.e); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}

	e := unitEnv{getenv: envOf(service), procCgroup: cg, daemonHere: true}
	if l := bindToService(nil, e); l[unitbind.BindToLabel] != "docker-container@web.service" {
		t.Errorf("labels %v", l)
	}
	// The user's own value wins, an empty one included (no tie).
	for _, v := range []string{"", "other.service"} {
		l := bindToService(map[string]string{unitbind.BindToLabel: v}, e)
		if l[unitbind.BindToLabel] != v {
			t.Errorf("user's %q became %q", v, l[unitbind.BindToLabel])
		}
	}
}

func TestUnitWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"the unit's, for the CLI", map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"}, "WATCHDOG_USEC=30000000"},
		{"no WATCHDOG_PID", map[string]string{"WATCHDOG_USEC": "5000000"}, "WATCHDOG_USEC=5000000"},
		{"another process's", map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, ""},
		{"none", nil, ""},
		{"zero", map[string]string{"WATCHDOG_USEC": "0"}, ""},
		{"garbage", map[string]string{"WATCHDOG_USEC": "30s"}, ""},
	} {
		e := unitEnv{getenv: envOf(tc.env), pid: 42}
		if got := unitWatchdog(e); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	e := unitEnv{getenv: envOf(map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"}), pid: 42}
	if got := withUnitWatchdog([]string{"A=1"}, e); !slices.Equal(got, []string{"A=1", "WATCHDOG_USEC=30000000"}) {
		t.Errorf("env %v", got)
	}
	for _, user := range [][]string{{"WATCHDOG_USEC=1000000"}, {"WATCHDOG_USEC"}} {
		if got := withUnitWatchdog(slices.Clone(user), e); !slices.Equal(got, user) {
			t.Errorf("the user's %v became %v", user, got)
		}
	}
}

// A daemon listening beside the CLI (here the test itself, so its peer
// credentials name a process in our namespaces) is under the same
// systemd; one over TCP or one that cannot be reached is not.
func TestSameSystemdAsDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if !sameSystemdAsDaemon("unix://" + sock) {
		t.Error("a daemon beside the CLI is not under its systemd")
	}
	for _, h := range []string{"tcp://127.0.0.1:2375", "unix://" + sock + ".none", "ssh://host"} {
		if sameSystemdAsDaemon(h) {
			t.Errorf("%s is under the CLI's systemd", h)
		}
	}
}
