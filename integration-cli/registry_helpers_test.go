//go:build integration

package integrationcli

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"crypto/tls"

	"golang.org/x/crypto/bcrypt"

	"github.com/sdengine/engine/internal/testcerts"
	"github.com/sdengine/engine/internal/testenv"
)

// registryBin is Debian's docker-registry (the distribution registry).
const registryBin = "/usr/bin/docker-registry"

// testRegistry is a real registry on a loopback port, started by a test
// and killed (by PID) with its storage removed when the test ends.
type testRegistry struct {
	Addr    string // 127.0.0.1:port
	Storage string // the filesystem driver's root
	User    string
	Pass    string
	// Certs is the TLS material of an auth registry: its CA signed the
	// server's certificate and the client certificate it may require.
	Certs *testcerts.Set
	cmd   *exec.Cmd
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startRegistry starts a plain HTTP registry, or with auth one with
// htpasswd basic auth (user "tester") behind a self-signed certificate.
func startRegistry(t testing.TB, auth bool) *testRegistry {
	t.Helper()
	return startRegistryTLS(t, auth, false)
}

// startRegistryTLS is startRegistry; with clientCert the auth registry
// also requires a client certificate signed by its CA (Certs.ClientCert).
func startRegistryTLS(t testing.TB, auth, clientCert bool) *testRegistry {
	t.Helper()
	testenv.Require(t, fileExists(registryBin), "Debian's docker-registry package (hack/deps)")
	dir, err := os.MkdirTemp("", "registry-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &testRegistry{Addr: freePort(t), Storage: filepath.Join(dir, "storage")}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", r.Storage, r.Addr)
	scheme := "http"
	if auth {
		scheme = "https"
		certs, err := testcerts.Generate(filepath.Join(dir, "certs"))
		if err != nil {
			t.Fatal(err)
		}
		r.Certs = certs
		r.User, r.Pass = "tester", "s3cret-pass"
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", certs.ServerCert, certs.ServerKey)
		if clientCert {
			cfg += fmt.Sprintf("    clientcas:\n      - %s\n", certs.CA)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: test-realm\n    path: %s\n", htpasswd)
	}
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(registryBin, "serve", cfgPath)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start registry: %v", err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait() //nolint:errcheck // killed
		logf.Close()
	})
	tlsCfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test's own certificate
	if r.Certs != nil {
		if kp, err := tls.LoadX509KeyPair(r.Certs.ClientCert, r.Certs.ClientKey); err == nil {
			tlsCfg.Certificates = []tls.Certificate{kp}
		}
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil}}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(scheme + "://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(logf.Name())
	t.Fatalf("registry did not come up:\n%s", log)
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
