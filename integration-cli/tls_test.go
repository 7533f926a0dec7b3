//go:build integration

package integrationcli

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testcerts"
)

// freeLoopbackPort returns a port on 127.0.0.1 that nothing listens on.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runClean runs a CLI in an environment with none of the host's docker
// settings: no DOCKER_HOST or DOCKER_TLS*, DOCKER_CERT_PATH or
// DOCKER_CONFIG, and a HOME without ~/.docker; env adds to it.
func runClean(t *testing.T, bin string, env []string, stdin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DOCKER_HOST", "DOCKER_TLS", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONFIG", "HOME":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir(), "DOCKER_CLI_HINTS=false")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errb.WriteString(err.Error())
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

func genCerts(t *testing.T) *testcerts.Set {
	t.Helper()
	s, err := testcerts.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// refusedTLS reports whether a CLI's failure is the daemon refusing the
// client's certificate (none, or one it does not trust) during the
// handshake.
func refusedTLS(stderr string) bool {
	for _, s := range []string{"certificate required", "bad certificate", "unknown certificate authority"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// TestTLSVerify: a private daemon on 127.0.0.1 with --tlsverify serves the
// stock CLI and ours, given the files as flags or as DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH, streams included (run -i, exec); it refuses clients
// without a certificate from its CA, plain HTTP and TLS below 1.2, while
// its unix socket stays plain.
func TestTLSVerify(t *testing.T) {
	s, other := genCerts(t), genCerts(t)
	port := freeLoopbackPort(t)
	host := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	d := NewDaemon(t, "-H", host, "--tlsverify", "--tlscacert", s.CA, "--tlscert", s.ServerCert, "--tlskey", s.ServerKey)
	d.Start(t) // pings over the unix socket: plain HTTP there
	defer d.Cleanup(t)
	loadBusybox(t, d)
	want := d.MustCLI(t, "version", "--format", "{{.Server.Version}}")
	if strings.Contains(d.Log(), "without --tlsverify is insecure") {
		t.Errorf("a verifying daemon warned about an unverified socket:\n%s", d.Log())
	}

	files := []string{"--tlsverify", "--tlscacert", s.CA, "--tlscert", s.ClientCert, "--tlskey", s.ClientKey, "-H", host}
	// testcerts names the client's files as DOCKER_CERT_PATH wants them.
	env := []string{"DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + s.Dir, "DOCKER_HOST=" + host}
	for _, c := range []struct {
		name string
		bin  string
		env  []string
		args []string
	}{
		{"stock CLI, flags", stockCLI, nil, files},
		{"our CLI, flags", ourCLI, nil, files},
		{"stock CLI, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH", stockCLI, env, nil},
		{"our CLI, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH", ourCLI, env, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := func(a ...string) []string { return append(append([]string{}, c.args...), a...) }
			if r := runClean(t, c.bin, c.env, "", args("version", "--format", "{{.Server.Version}}")...); r.Code != 0 || strings.TrimSpace(r.Stdout) != want {
				t.Fatalf("version over TLS: %s", r)
			}
			// Hijacked streams over TLS: stdin in, output and exit code out.
			if r := runClean(t, c.bin, c.env, "over tls\n", args("run", "--rm", "-i", "busybox", "sh", "-c", "cat; exit 3")...); r.Code != 3 || r.Stdout != "over tls\n" {
				t.Errorf("run -i over TLS: %s", r)
			}
			if r := runClean(t, c.bin, c.env, "", args("info", "--format", "{{.ServerVersion}}")...); r.Code != 0 || strings.TrimSpace(r.Stdout) != want {
				t.Errorf("info over TLS: %s", r)
			}
		})
	}

	t.Run("without a client certificate", func(t *testing.T) {
		for _, bin := range []string{stockCLI, ourCLI} {
			r := runClean(t, bin, nil, "", "--tlsverify", "--tlscacert", s.CA, "-H", host, "version")
			if r.Code == 0 || !refusedTLS(r.Stderr) {
				t.Errorf("%s: %s", bin, r)
			}
		}
		// The same with the Go TLS stack directly: the handshake fails.
		if err := handshake(t, s, nil, 0, port); err == nil {
			t.Error("TLS handshake without a client certificate succeeded")
		}
	})
	t.Run("with another CA's certificate", func(t *testing.T) {
		r := runClean(t, ourCLI, nil, "", "--tlsverify", "--tlscacert", s.CA, "--tlscert", other.ClientCert, "--tlskey", other.ClientKey, "-H", host, "version")
		if r.Code == 0 || !refusedTLS(r.Stderr) {
			t.Errorf("%s", r)
		}
	})
	t.Run("plain HTTP", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/_ping", port))
		if err != nil {
			t.Fatalf("plain GET /_ping: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Client sent an HTTP request to an HTTPS server") {
			t.Errorf("plain GET /_ping: %s %q", resp.Status, body)
		}
		for _, bin := range []string{stockCLI, ourCLI} {
			r := runClean(t, bin, nil, "", "-H", host, "version")
			if r.Code == 0 || !strings.Contains(r.Stderr, "Client sent an HTTP request to an HTTPS server") {
				t.Errorf("%s without TLS: %s", bin, r)
			}
		}
	})
	t.Run("TLS 1.1", func(t *testing.T) {
		if err := handshake(t, s, s, tls.VersionTLS11, port); err == nil {
			t.Error("TLS 1.1 handshake succeeded")
		}
		if err := handshake(t, s, s, tls.VersionTLS12, port); err != nil {
			t.Errorf("TLS 1.2 handshake: %v", err)
		}
	})
}

// handshake does a TLS handshake with the daemon on port, trusting ca's
// CA and presenting client's certificate (none when nil), at most TLS
// maxVersion (0: any), and one request on it: a refused certificate shows
// in TLS 1.3 only when the client first reads.
func handshake(t *testing.T, ca, client *testcerts.Set, maxVersion uint16, port int) error {
	t.Helper()
	c := testcerts.ClientConfig(t, ca, client, maxVersion)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port), c)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET /_ping HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 200")) {
		return fmt.Errorf("reply %q", b)
	}
	return nil
}

// TestTCPWithoutTLSRefused: -H tcp://127.0.0.1:PORT with neither TLS nor
// --tls=false stops dockerd before it creates anything, with exit status 1
// and an error that says what to do.
func TestTCPWithoutTLSRefused(t *testing.T) {
	port := freeLoopbackPort(t)
	host := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	d := NewDaemon(t, "-H", host)
	defer d.Cleanup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, dockerd, d.Args...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("dockerd -H %s without TLS: %v, want exit status 1\n%s", host, err, out)
	}
	msg := string(out)
	for _, w := range []string{"refusing to serve the API on " + host + " without TLS", "--tlsverify", "--tls=false"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	for _, p := range []string{d.Root, d.ExecRoot, d.Sock} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused daemon created %s", p)
		}
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on %s", host)
	}
}

// TestTCPWithTLSFalse: --tls=false is the explicit opt-in to plain HTTP on
// TCP: dockerd starts, with Docker's warning, and both CLIs use it.
func TestTCPWithTLSFalse(t *testing.T) {
	port := freeLoopbackPort(t)
	host := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	d := NewDaemon(t, "-H", host, "--tls=false")
	d.Start(t)
	defer d.Cleanup(t)
	if !strings.Contains(d.Log(), "Binding to IP address without --tlsverify is insecure and gives root access on this machine to everyone who has access to your network.") {
		t.Errorf("no warning for plain HTTP on TCP:\n%s", d.Log())
	}
	want := d.MustCLI(t, "version", "--format", "{{.Server.Version}}")
	for _, bin := range []string{stockCLI, ourCLI} {
		if r := runClean(t, bin, nil, "", "-H", host, "version", "--format", "{{.Server.Version}}"); r.Code != 0 || strings.TrimSpace(r.Stdout) != want {
			t.Errorf("%s over plain TCP: %s", bin, r)
		}
	}
}
