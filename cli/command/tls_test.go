package command

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdengine/engine/internal/testcerts"
)

// clearTLSEnv leaves the environment without any of the variables the
// TLS defaults read.
func clearTLSEnv(t *testing.T) {
	for _, v := range []string{"DOCKER_TLS", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONFIG", "DOCKER_HOST"} {
		t.Setenv(v, "")
	}
}

func TestDefaultTLSOptions(t *testing.T) {
	clearTLSEnv(t)
	t.Setenv("HOME", "/home/u")
	o := DefaultTLSOptions()
	if o.TLS || o.Verify || o.Enabled() || o.CACert != "/home/u/.docker/ca.pem" || o.Cert != "/home/u/.docker/cert.pem" || o.Key != "/home/u/.docker/key.pem" {
		t.Errorf("plain environment: %+v", o)
	}
	t.Setenv("DOCKER_CONFIG", "/cfg")
	if o := DefaultTLSOptions(); o.CACert != "/cfg/ca.pem" {
		t.Errorf("DOCKER_CONFIG: %+v", o)
	}
	t.Setenv("DOCKER_CERT_PATH", "/certs")
	// Any value turns them on, "0" too, as in the docker CLI.
	t.Setenv("DOCKER_TLS_VERIFY", "0")
	t.Setenv("DOCKER_TLS", "1")
	if o := DefaultTLSOptions(); !o.TLS || !o.Verify || o.Key != "/certs/key.pem" {
		t.Errorf("DOCKER_CERT_PATH, DOCKER_TLS_VERIFY, DOCKER_TLS: %+v", o)
	}
}

func genCerts(t *testing.T) *testcerts.Set {
	t.Helper()
	s, err := testcerts.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func givenFlags(names ...string) func(string) bool {
	return func(f string) bool {
		for _, n := range names {
			if n == f {
				return true
			}
		}
		return false
	}
}

func TestTLSClientConfig(t *testing.T) {
	s := genCerts(t)
	none := filepath.Join(t.TempDir(), "none")
	if c, err := (TLSOptions{CACert: s.CA}).ClientConfig(); c != nil || err != nil {
		t.Errorf("TLS off: %v %v", c, err)
	}
	// --tlsverify with the CA and the client's pair.
	c, err := TLSOptions{Verify: true, CACert: s.CA, Cert: s.ClientCert, Key: s.ClientKey}.ClientConfig()
	if err != nil || c.InsecureSkipVerify || c.RootCAs == nil || len(c.Certificates) != 1 || c.MinVersion != tls.VersionTLS12 {
		t.Errorf("--tlsverify: %+v %v", c, err)
	}
	// --tlsverify=false given: TLS without verifying the daemon.
	c, err = TLSOptions{CACert: s.CA, Given: givenFlags("tlsverify")}.ClientConfig()
	if err != nil || c == nil || !c.InsecureSkipVerify {
		t.Errorf("--tlsverify=false: %+v %v", c, err)
	}
	// --tls alone does not verify (the daemon's --tls does).
	if c, err := (TLSOptions{TLS: true, CACert: s.CA}).ClientConfig(); err != nil || !c.InsecureSkipVerify {
		t.Errorf("--tls: %+v %v", c, err)
	}
	// Default certificate and key that are not there: no client certificate.
	c, err = TLSOptions{Verify: true, CACert: s.CA, Cert: none, Key: none}.ClientConfig()
	if err != nil || len(c.Certificates) != 0 {
		t.Errorf("missing default pair: %+v %v", c, err)
	}
	for _, bad := range []struct {
		o    TLSOptions
		want string
	}{
		{TLSOptions{Verify: true, CACert: none}, "no such file"},
		{TLSOptions{TLS: true, CACert: none}, "no such file"},
		{TLSOptions{Verify: true, CACert: s.ClientKey}, "no PEM certificate"},
		{TLSOptions{Verify: true, CACert: s.CA, Cert: none, Key: s.ClientKey, Given: givenFlags("tlscert")}, "no such file"},
		{TLSOptions{Verify: true, CACert: s.CA, Cert: s.ClientCert, Key: s.ServerKey}, "client certificate"},
	} {
		if _, err := bad.o.ClientConfig(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.o, err, bad.want)
		}
	}
}

// TestClientOverTLS: the CLI's client, and RawRequest through it, speak
// TLS to a daemon that wants a client certificate.
func TestClientOverTLS(t *testing.T) {
	clearTLSEnv(t)
	s := genCerts(t)
	host := testcerts.Serve(t, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.43")
		if r.URL.Path == "/_ping" {
			_, _ = io.WriteString(w, "OK")
			return
		}
		_, _ = io.WriteString(w, `{"Path":"`+r.URL.Path+`"}`)
	}))
	c := NewCli(io.NopCloser(strings.NewReader("")), io.Discard, io.Discard)
	c.Host = host
	c.TLS = TLSOptions{Verify: true, CACert: s.CA, Cert: s.ClientCert, Key: s.ClientKey}
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := cl.Ping(context.Background()); err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}
	data, err := RawRequest(context.Background(), cl, http.MethodGet, "/info", nil, nil)
	if err != nil || !strings.Contains(string(data), "/v1.43/info") {
		t.Errorf("raw request over TLS: %s %v", data, err)
	}

	// Without a client certificate the daemon refuses the connection.
	c2 := NewCli(io.NopCloser(strings.NewReader("")), io.Discard, io.Discard)
	c2.Host = host
	c2.TLS = TLSOptions{Verify: true, CACert: s.CA}
	cl2, err := c2.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := cl2.Ping(context.Background()); err == nil {
		t.Error("ping without a client certificate succeeded")
	}
}

// TestClientHost: with TLS on and no host, the CLI goes to
// tcp://localhost:2376; DOCKER_HOST and -H win; a CA that cannot be read
// fails as the docker CLI does.
func TestClientHost(t *testing.T) {
	clearTLSEnv(t)
	s := genCerts(t)
	host := func(tlsOn bool, flag, env string) string {
		t.Helper()
		t.Setenv("DOCKER_HOST", env)
		c := NewCli(io.NopCloser(strings.NewReader("")), io.Discard, io.Discard)
		c.Host = flag
		c.TLS = TLSOptions{Verify: tlsOn, CACert: s.CA}
		cl, err := c.Client()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return cl.DaemonHost()
	}
	for _, c := range []struct {
		tls        bool
		flag, env  string
		wantDaemon string
	}{
		{false, "", "", "unix:///var/run/docker.sock"},
		{true, "", "", "tcp://localhost:2376"},
		{true, "", "tcp://10.0.0.1:2376", "tcp://10.0.0.1:2376"},
		{true, "tcp://10.0.0.2:2376", "tcp://10.0.0.1:2376", "tcp://10.0.0.2:2376"},
	} {
		if got := host(c.tls, c.flag, c.env); got != c.wantDaemon {
			t.Errorf("tls=%v -H %q DOCKER_HOST=%q: %s, want %s", c.tls, c.flag, c.env, got, c.wantDaemon)
		}
	}
	c := NewCli(io.NopCloser(strings.NewReader("")), io.Discard, io.Discard)
	c.TLS = TLSOptions{Verify: true, CACert: "/nonexistent/ca.pem"}
	if _, err := c.Client(); err == nil || err.Error() != "Failed to initialize: unable to resolve docker endpoint: open /nonexistent/ca.pem: no such file or directory" {
		t.Errorf("missing CA: %v", err)
	}
}
