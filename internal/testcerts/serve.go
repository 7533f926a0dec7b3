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
	pem, err := os.ReadFile(s.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
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
