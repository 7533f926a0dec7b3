package cli

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sdengine/engine/internal/testcerts"
)

// TestGlobalTLSFlags runs `docker version` against a fake daemon that
// speaks TLS and wants a client certificate from its CA, with the TLS
// settings given as flags and as DOCKER_TLS_VERIFY/DOCKER_CERT_PATH.
func TestGlobalTLSFlags(t *testing.T) {
	for _, v := range []string{"DOCKER_TLS", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONFIG", "DOCKER_HOST"} {
		t.Setenv(v, "")
	}
	t.Setenv("HOME", t.TempDir()) // no ~/.docker
	s, err := testcerts.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := fakeTLSDaemon(t, s)
	docker := func(env map[string]string, args ...string) (string, string, int) {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		var out, errb bytes.Buffer
		code := Run(args, io.NopCloser(strings.NewReader("")), &out, &errb)
		for k := range env {
			t.Setenv(k, "")
		}
		return out.String(), errb.String(), code
	}
	// Plain `version`: with --format a server error is hidden by the
	// template's own on the missing .Server.
	version := []string{"-H", host, "version"}
	flags := []string{"--tlscacert", s.CA, "--tlscert", s.ClientCert, "--tlskey", s.ClientKey}

	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"--tlsverify and the files", nil, append(append([]string{"--tlsverify"}, flags...), version...)},
		{"--tls and the files", nil, append(append([]string{"--tls"}, flags...), version...)},
		{"--tlsverify=false and the files", nil, append(append([]string{"--tlsverify=false"}, flags...), version...)},
		{"DOCKER_TLS_VERIFY, DOCKER_CERT_PATH", map[string]string{"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": s.Dir}, version},
		{"DOCKER_TLS, DOCKER_CERT_PATH", map[string]string{"DOCKER_TLS": "1", "DOCKER_CERT_PATH": s.Dir}, version},
		{"DOCKER_CERT_PATH, --tlsverify", map[string]string{"DOCKER_CERT_PATH": s.Dir}, append([]string{"--tlsverify"}, version...)},
	} {
		out, errOut, code := docker(c.env, c.args...)
		if code != 0 || !strings.Contains(out, "28.5.2-fake") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, errOut)
		}
	}

	// Refused: no client certificate; plain HTTP; DOCKER_CERT_PATH alone
	// (which turns nothing on, as in the docker CLI).
	if _, errOut, code := docker(nil, append([]string{"--tlsverify", "--tlscacert", s.CA}, version...)...); code == 0 || !strings.Contains(errOut, "tls") {
		t.Errorf("no client certificate: exit %d, %q", code, errOut)
	}
	if _, errOut, code := docker(nil, version...); code == 0 || !strings.Contains(errOut, "HTTPS server") {
		t.Errorf("plain HTTP: exit %d, %q", code, errOut)
	}
	if _, errOut, code := docker(map[string]string{"DOCKER_CERT_PATH": s.Dir}, version...); code == 0 || !strings.Contains(errOut, "HTTPS server") {
		t.Errorf("DOCKER_CERT_PATH alone: exit %d, %q", code, errOut)
	}
	// A CA file that is not there stops the CLI before it connects.
	if _, errOut, code := docker(nil, append([]string{"--tlsverify", "--tlscacert", "/nonexistent/ca.pem"}, version...)...); code != 1 || !strings.Contains(errOut, "unable to resolve docker endpoint: open /nonexistent/ca.pem") {
		t.Errorf("missing CA: exit %d, %q", code, errOut)
	}
}

// fakeTLSDaemon answers /_ping and /version over TLS, to clients with a
// certificate from s's CA; it returns its tcp:// host.
func fakeTLSDaemon(t *testing.T, s *testcerts.Set) string {
	return testcerts.Serve(t, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.51")
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			_, _ = io.WriteString(w, "OK")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Version":"28.5.2-fake","ApiVersion":"1.51","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}`)
	}))
}
