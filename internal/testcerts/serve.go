package testcerts

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"testing"
)

// Serve runs handler on a loopback TLS listener with s's server
// certificate that requires a client certificate from s's CA (as a daemon
// with --tlsverify does), until the test ends. It returns the tcp:// host.
func Serve(t testing.TB, s *Set, handler http.Handler) string {
	t.Helper()
	pool := CAPool(t, s)
	kp, err := tls.LoadX509KeyPair(s.ServerCert, s.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{kp}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	srv := &http.Server{Handler: handler}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return "tcp://" + l.Addr().String()
}

// CAPool is a certificate pool holding s's CA.
func CAPool(t testing.TB, s *Set) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(s.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return pool
}

// ClientConfig is a TLS client configuration that trusts ca's CA, presents
// client's client certificate (none when client is nil) and speaks TLS 1.0
// up to maxVersion (0: any).
func ClientConfig(t testing.TB, ca, client *Set, maxVersion uint16) *tls.Config {
	t.Helper()
	c := &tls.Config{RootCAs: CAPool(t, ca), MinVersion: tls.VersionTLS10, MaxVersion: maxVersion}
	if client != nil {
		kp, err := tls.LoadX509KeyPair(client.ClientCert, client.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c
}
