package command

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/config"
	"github.com/sdengine/engine/internal/testcerts"
	"github.com/sdengine/engine/internal/testenv"
)

// parseDockerd runs dockerd's command line on args with daemon.json holding
// file, stopping where the daemon would start; it returns what start got.
func parseDockerd(t *testing.T, file string, args ...string) (*config.Config, *tls.Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "daemon.json")
	if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	var (
		gotCfg *config.Config
		gotTLS *tls.Config
	)
	cmd := newCommand(func(c *config.Config, tc *tls.Config, _ loadFunc) error {
		gotCfg, gotTLS = c, tc
		return nil
	})
	cmd.SetArgs(append([]string{"--config-file", p}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	return gotCfg, gotTLS, err
}

func certs(t *testing.T) *testcerts.Set {
	t.Helper()
	s, err := testcerts.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func serverFlags(s *testcerts.Set) []string {
	return []string{"--tlscacert", s.CA, "--tlscert", s.ServerCert, "--tlskey", s.ServerKey}
}

// TestPlainTCPRefused: a tcp:// host without TLS is refused unless
// --tls=false (or "tls": false) says so; unix and fd hosts never are.
func TestPlainTCPRefused(t *testing.T) {
	for _, c := range []struct {
		file string
		args []string
		ok   bool
	}{
		{"{}", []string{"-H", "tcp://127.0.0.1:2375"}, false},
		{"{}", []string{"-H", "unix:///run/x.sock", "-H", "tcp://0.0.0.0:2375"}, false},
		{`{"hosts":["tcp://127.0.0.1:2375"]}`, nil, false},
		{"{}", []string{"-H", "tcp://127.0.0.1:2375", "--tls=false"}, true},
		{`{"tls":false}`, []string{"-H", "tcp://127.0.0.1:2375"}, true},
		{`{"tls":false,"hosts":["tcp://127.0.0.1:2375"]}`, nil, true},
		{"{}", []string{"-H", "unix:///run/x.sock"}, true},
		{"{}", []string{"-H", "fd://"}, true},
		{"{}", nil, true}, // the default unix socket
	} {
		_, tc, err := parseDockerd(t, c.file, c.args...)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s %q: %v", c.file, c.args, err)
		case c.ok && tc != nil:
			t.Errorf("%s %q: TLS without asking", c.file, c.args)
		case !c.ok && err == nil:
			t.Errorf("%s %q: plain HTTP on TCP accepted", c.file, c.args)
		case !c.ok && (!strings.Contains(err.Error(), "without TLS") || !strings.Contains(err.Error(), "--tls=false") || !strings.Contains(err.Error(), "tcp://")):
			t.Errorf("%s %q: unclear error: %v", c.file, c.args, err)
		}
	}
}

// TestTLSModes: tls, tlsverify and the files, from the flags and from
// daemon.json, resolved as dockerd resolves them.
func TestTLSModes(t *testing.T) {
	s := certs(t)
	files := `"tlscacert":"` + s.CA + `","tlscert":"` + s.ServerCert + `","tlskey":"` + s.ServerKey + `"`
	tcp := []string{"-H", "tcp://127.0.0.1:2376"}
	for _, c := range []struct {
		name string
		file string
		args []string
		want tls.ClientAuthType
	}{
		{"--tlsverify", "{}", append(append([]string{"--tlsverify"}, serverFlags(s)...), tcp...), tls.RequireAndVerifyClientCert},
		// dockerd's --tls verifies unless --tlsverify=false (the docker
		// CLI's does not).
		{"--tls", "{}", append(append([]string{"--tls"}, serverFlags(s)...), tcp...), tls.RequireAndVerifyClientCert},
		{"--tlsverify=false", "{}", append(append([]string{"--tlsverify=false"}, serverFlags(s)...), tcp...), tls.NoClientCert},
		{"--tls=false --tlsverify", "{}", append(append([]string{"--tls=false", "--tlsverify"}, serverFlags(s)...), tcp...), tls.RequireAndVerifyClientCert},
		{"daemon.json tlsverify", `{"tlsverify":true,` + files + `}`, tcp, tls.RequireAndVerifyClientCert},
		{"daemon.json tls", `{"tls":true,` + files + `}`, tcp, tls.RequireAndVerifyClientCert},
		{"daemon.json tlsverify false", `{"tls":false,"tlsverify":false,` + files + `}`, tcp, tls.NoClientCert},
		{"unix only", "{}", append([]string{"--tlsverify", "-H", "unix:///run/x.sock"}, serverFlags(s)...), tls.RequireAndVerifyClientCert},
	} {
		_, tc, err := parseDockerd(t, c.file, c.args...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if tc == nil {
			t.Errorf("%s: no TLS", c.name)
			continue
		}
		if tc.ClientAuth != c.want {
			t.Errorf("%s: client auth %v, want %v", c.name, tc.ClientAuth, c.want)
		}
		if tc.MinVersion != tls.VersionTLS12 {
			t.Errorf("%s: minimum version %x, want TLS 1.2", c.name, tc.MinVersion)
		}
		if c.want == tls.RequireAndVerifyClientCert && tc.ClientCAs == nil {
			t.Errorf("%s: verifies clients without the CA", c.name)
		}
		if strings.Join(tc.NextProtos, ",") != "http/1.1" {
			t.Errorf("%s: ALPN %q: hijacked streams need HTTP/1.1", c.name, tc.NextProtos)
		}
	}
}

func TestTLSErrors(t *testing.T) {
	s := certs(t)
	tcp := []string{"-H", "tcp://127.0.0.1:2376"}
	for _, c := range []struct {
		file string
		args []string
		want string
	}{
		// a setting both in daemon.json and on the command line
		{`{"tlsverify":true}`, append([]string{"--tlsverify"}, tcp...), "specified both as a flag and in the configuration file: tlsverify"},
		{`{"tlscacert":"` + s.CA + `"}`, append([]string{"--tlscacert", s.CA}, tcp...), "tlscacert"},
		{`{"tls":true}`, append([]string{"--tls=false"}, tcp...), "tls"},
		// files that are not there
		{"{}", append([]string{"--tlsverify", "--tlscacert", "/nonexistent/ca.pem", "--tlscert", s.ServerCert, "--tlskey", s.ServerKey}, tcp...), "could not read CA certificate"},
		{"{}", append([]string{"--tlsverify", "--tlscacert", s.CA, "--tlscert", "/nonexistent/cert.pem", "--tlskey", s.ServerKey}, tcp...), "could not load X509 key pair"},
		{"{}", append([]string{"--tlsverify", "--tlscacert", s.CA, "--tlscert", s.ServerCert, "--tlskey", s.ClientKey}, tcp...), "invalid TLS configuration"},
		// verifying clients needs the CA that signs them
		{"{}", append([]string{"--tlsverify", "--tlscacert=", "--tlscert", s.ServerCert, "--tlskey", s.ServerKey}, tcp...), "--tlscacert"},
	} {
		_, _, err := parseDockerd(t, c.file, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want %q", c.file, c.args, err, c.want)
		}
	}
}

// TestTLSDefaultFiles: the files default to ca.pem, cert.pem and key.pem in
// $DOCKER_CERT_PATH, else $DOCKER_CONFIG, else ~/.docker, as in Docker.
func TestTLSDefaultFiles(t *testing.T) {
	s := certs(t)
	t.Setenv("DOCKER_CONFIG", "/nonexistent")
	t.Setenv("DOCKER_CERT_PATH", s.Dir)
	cfg, tc, err := parseDockerd(t, "{}", "--tlsverify", "-H", "tcp://127.0.0.1:2376")
	if err != nil {
		t.Fatal(err)
	}
	if tc == nil || cfg.TLSCACert != s.CA || cfg.TLSCert != s.ClientCert || cfg.TLSKey != s.ClientKey {
		t.Errorf("defaults from DOCKER_CERT_PATH: %q %q %q", cfg.TLSCACert, cfg.TLSCert, cfg.TLSKey)
	}
	// daemon.json may name files beside the defaults without a conflict.
	if _, _, err := parseDockerd(t, `{"tlscert":"`+s.ServerCert+`","tlskey":"`+s.ServerKey+`"}`, "--tlsverify", "-H", "tcp://127.0.0.1:2376"); err != nil {
		t.Error(err)
	}
	t.Setenv("DOCKER_CERT_PATH", "")
	if got := config.Default().TLSCACert; got != "/nonexistent/ca.pem" {
		t.Errorf("default CA with DOCKER_CONFIG: %s", got)
	}
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("HOME", "/home/someone")
	if got := config.Default().TLSKey; got != "/home/someone/.docker/key.pem" {
		t.Errorf("default key: %s", got)
	}
}

// tlsClient returns an HTTPS client for the set's CA, with the set's
// client certificate when withCert.
func tlsClient(t *testing.T, s *testcerts.Set, withCert bool, maxVersion uint16) *http.Client {
	t.Helper()
	var client *testcerts.Set
	if withCert {
		client = s
	}
	c := testcerts.ClientConfig(t, s, client, maxVersion)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b), err
}

// TestListenTLS: with --tlsverify the TCP socket lets in only clients with a
// certificate from the CA, over TLS 1.2 or later; the unix socket beside it
// stays plain HTTP.
func TestListenTLS(t *testing.T) {
	s, other := certs(t), certs(t)
	sock := filepath.Join(t.TempDir(), "d.sock")
	cfg, tc, err := parseDockerd(t, "{}", append([]string{"--tlsverify", "-H", "tcp://127.0.0.1:0", "-H", "unix://" + sock}, serverFlags(s)...)...)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := listen(cfg, tc)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK") })}
	for _, l := range ls {
		go func() { _ = srv.Serve(l) }()
	}
	t.Cleanup(func() { srv.Close() })
	url := "https://" + ls[0].Addr().String() + "/_ping"

	if got, err := get(tlsClient(t, s, true, 0), url); err != nil || got != "200 OK OK" {
		t.Errorf("client with a certificate: %q %v", got, err)
	}
	if got, err := get(tlsClient(t, s, false, 0), url); err == nil {
		t.Errorf("client without a certificate let in: %q", got)
	}
	// A certificate from another CA is no better than none. (The client
	// trusts the daemon's CA; it is the daemon that must refuse.)
	foreign := tlsClient(t, s, true, 0)
	kp, _ := tls.LoadX509KeyPair(other.ClientCert, other.ClientKey)
	foreign.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{kp}
	if got, err := get(foreign, url); err == nil {
		t.Errorf("client with another CA's certificate let in: %q", got)
	}
	if got, err := get(tlsClient(t, s, true, tls.VersionTLS11), url); err == nil {
		t.Errorf("TLS 1.1 accepted: %q", got)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	if got, err := get(plain, "http://"+ls[0].Addr().String()+"/_ping"); err != nil || !strings.HasPrefix(got, "400 ") || !strings.Contains(got, "HTTPS server") {
		t.Errorf("plain HTTP on the TLS socket: %q %v", got, err)
	}
	if out, err := testenv.PingUnix(sock); err != nil || out != "OK" {
		t.Errorf("unix socket beside TLS: %q %v", out, err)
	}
}

// TestActivatedTCPSocketGetsTLS: of the sockets systemd passes, TCP ones
// speak TLS when it is on; unix ones stay plain.
func TestActivatedTCPSocketGetsTLS(t *testing.T) {
	s := certs(t)
	cfg, tc, err := parseDockerd(t, "{}", append([]string{"--tlsverify", "-H", "fd://"}, serverFlags(s)...)...)
	if err != nil {
		t.Fatal(err)
	}
	tcpL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unixL, err := net.Listen("unix", filepath.Join(t.TempDir(), "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ls := activatedWithTLS(cfg, "fd://", []net.Listener{tcpL, unixL}, tc)
	if ls[1] != unixL {
		t.Error("the unix socket was wrapped")
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK") })}
	for _, l := range ls {
		go func() { _ = srv.Serve(l) }()
	}
	t.Cleanup(func() { srv.Close() })
	if got, err := get(tlsClient(t, s, true, 0), "https://"+tcpL.Addr().String()+"/_ping"); err != nil || got != "200 OK OK" {
		t.Errorf("activated TCP socket over TLS: %q %v", got, err)
	}
	if out, err := testenv.PingUnix(unixL.Addr().String()); err != nil || out != "OK" {
		t.Errorf("activated unix socket: %q %v", out, err)
	}
}
