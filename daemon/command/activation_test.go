package command

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/internal/testenv"
)

// TestMain runs the child half of the socket-activation tests when the
// test binary is re-executed as one.
func TestMain(m *testing.M) {
	if hosts := os.Getenv("SDENGINE_TEST_ACTIVATION_HOSTS"); hosts != "" {
		activationChild(hosts)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// activationChild is the child half of the socket-activation tests: the
// test binary re-executed with the sockets as fds 3 and 4, the way systemd
// passes them. LISTEN_PID must name the process that reads them, which only
// the child knows, so it sets it itself (systemd sets it between fork and
// exec). It reports what listen gave, serves /_ping on each listener, and
// exits when its stdin closes.
func activationChild(hosts string) {
	if os.Getenv("LISTEN_FDS") != "" {
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	}
	ls, err := listen(&config.Config{Hosts: strings.Split(hosts, ",")}, nil)
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		return
	}
	if v := os.Getenv("LISTEN_FDS"); v != "" {
		fmt.Printf("ERROR LISTEN_FDS=%s left for children to inherit\n", v)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "OK")
	})}
	for _, l := range ls {
		fmt.Printf("LISTEN %s\n", l.Addr())
		go func() { _ = srv.Serve(l) }()
	}
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

type activationResult struct {
	addrs []string // what the child listens on, in order
	err   string   // listen's error, if any
}

// activate runs the child with the given -H hosts and, unless names is
// nil, two unix sockets passed as fds 3 and 4 with those
// FileDescriptorNames. check runs while the child serves.
func activate(t *testing.T, hosts string, names []string, check func(t *testing.T, socks []string, res activationResult)) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdact-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SDENGINE_TEST_ACTIVATION_HOSTS="+hosts)
	var socks []string
	if names != nil {
		for i := range names {
			sock := filepath.Join(dir, fmt.Sprintf("s%d.sock", i))
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			// The child's copy serves; ours goes away without taking the
			// path with it.
			l.SetUnlinkOnClose(false)
			f, err := l.File()
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			defer f.Close()
			cmd.ExtraFiles = append(cmd.ExtraFiles, f)
			socks = append(socks, sock)
		}
		cmd.Env = append(cmd.Env, "LISTEN_FDS="+strconv.Itoa(len(names)), "LISTEN_FDNAMES="+strings.Join(names, ":"))
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("child did not exit")
		}
	}()
	for _, f := range cmd.ExtraFiles {
		f.Close() // only the child holds the sockets now
	}
	var res activationResult
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		if v, ok := strings.CutPrefix(line, "LISTEN "); ok {
			res.addrs = append(res.addrs, v)
		} else if v, ok := strings.CutPrefix(line, "ERROR "); ok {
			res.err = v
			break
		} else if line == "READY" {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	check(t, socks, res)
}

func wantServed(t *testing.T, res activationResult, want ...string) {
	t.Helper()
	if res.err != "" {
		t.Fatalf("listen: %s", res.err)
	}
	if strings.Join(res.addrs, " ") != strings.Join(want, " ") {
		t.Fatalf("listening on %q, want %q (each socket once)", res.addrs, want)
	}
	for _, sock := range want {
		if out, err := testenv.PingUnix(sock); err != nil || out != "OK" {
			t.Errorf("/_ping on %s: %q %v", sock, out, err)
		}
	}
}

func TestListenActivatedTwiceServesEachSocketOnce(t *testing.T) {
	activate(t, "fd://,fd://", []string{"api", "other"}, func(t *testing.T, s []string, res activationResult) {
		wantServed(t, res, s[0], s[1])
	})
}

func TestListenActivatedOneFdAllTwoSockets(t *testing.T) {
	activate(t, "fd://", []string{"a", "b"}, func(t *testing.T, s []string, res activationResult) {
		wantServed(t, res, s[0], s[1])
	})
}

func TestListenActivatedByNameThenAll(t *testing.T) {
	activate(t, "fd://other,fd://", []string{"api", "other"}, func(t *testing.T, s []string, res activationResult) {
		wantServed(t, res, s[1], s[0])
	})
}

func TestListenActivatedByNumberClosesTheRest(t *testing.T) {
	activate(t, "fd://4", []string{"api", "other"}, func(t *testing.T, s []string, res activationResult) {
		wantServed(t, res, s[1])
		// Nothing would ever accept on the socket no -H named.
		if _, err := testenv.PingUnix(s[0]); err == nil {
			t.Errorf("%s answers; it should have been closed", s[0])
		}
	})
}

func TestListenActivatedBesideAUnixSocket(t *testing.T) {
	own := filepath.Join(os.TempDir(), fmt.Sprintf("sdact-own-%d.sock", os.Getpid()))
	t.Cleanup(func() { os.Remove(own) })
	activate(t, "fd://,unix://"+own+",fd://", []string{"api", "other"}, func(t *testing.T, s []string, res activationResult) {
		wantServed(t, res, s[0], s[1], own)
	})
}

func TestListenActivatedErrors(t *testing.T) {
	for _, c := range []struct {
		hosts string
		names []string
		want  string
	}{
		{"fd://", nil, "no sockets found via socket activation"},
		{"fd://nosuch", []string{"api", "other"}, `no socket named "nosuch"`},
		{"fd://5", []string{"api", "other"}, "systemd passed 2 socket(s)"},
		{"fd://,tcp://256.0.0.1:1", []string{"api", "other"}, "listen on tcp://256.0.0.1:1"},
	} {
		activate(t, c.hosts, c.names, func(t *testing.T, s []string, res activationResult) {
			if !strings.Contains(res.err, c.want) {
				t.Errorf("-H %s: error %q, want %q", c.hosts, res.err, c.want)
			}
		})
	}
}
