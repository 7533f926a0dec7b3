package distribution

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// registryTLS is the TLS configuration for host, as Docker builds it:
// the system's roots plus every *.crt of certs.d/<host>/ as CAs, and each
// *.cert there with the *.key of the same name as a client certificate.
// An insecure registry's certificate is not verified, but its client
// certificates are still offered.
func (s *Service) registryTLS(host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.isInsecure(host) {
		cfg.InsecureSkipVerify = true //nolint:gosec // the user listed it insecure (or it is loopback, as in Docker)
	}
	if s.certsDir == "" {
		return cfg, nil
	}
	dir := filepath.Join(s.certsDir, certsDirName(host))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read registry certificates of %s: %w", host, err)
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, ".crt"):
			if cfg.RootCAs == nil {
				pool, err := x509.SystemCertPool()
				if err != nil || pool == nil {
					pool = x509.NewCertPool()
				}
				cfg.RootCAs = pool
			}
			pem, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("read registry CA %s: %w", p, err)
			}
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("registry CA %s holds no PEM certificate", p)
			}
		case strings.HasSuffix(name, ".cert"):
			key := strings.TrimSuffix(p, ".cert") + ".key"
			pair, err := tls.LoadX509KeyPair(p, key)
			if err != nil {
				return nil, fmt.Errorf("load registry client certificate %s (key %s): %w", p, key, err)
			}
			cfg.Certificates = append(cfg.Certificates, pair)
		case strings.HasSuffix(name, ".key"):
			cert := strings.TrimSuffix(name, ".key") + ".cert"
			if _, err := os.Stat(filepath.Join(dir, cert)); err != nil {
				return nil, fmt.Errorf("missing client certificate %s for key %s", cert, name)
			}
		}
	}
	return cfg, nil
}

// certsDirName is host's directory under certs.d: Docker Hub's registry
// is registry-1.docker.io there, as in Docker.
func certsDirName(host string) string {
	if host == dockerHub {
		return "registry-1.docker.io"
	}
	return host
}

// failingTransport answers every request with err: a registry whose
// certs.d cannot be read is not spoken to without them.
type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }
