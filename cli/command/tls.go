package command

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docker/go-connections/tlsconfig"
)

// DefaultTLSHost is where the CLI connects with TLS on and no host given
// (no -H, no DOCKER_HOST), as the docker CLI does.
const DefaultTLSHost = "tcp://localhost:2376"

// TLSOptions are the global --tls, --tlsverify, --tlscacert, --tlscert and
// --tlskey flags, taken as the docker CLI takes them (docs/tls.md):
//
//   - TLS is on with --tls, or --tlsverify given at all (true or false),
//     or their defaults from the environment: DOCKER_TLS and
//     DOCKER_TLS_VERIFY (any non-empty value);
//   - the daemon's certificate is verified against --tlscacert unless
//     --tlsverify is false;
//   - the files default to ca.pem, cert.pem and key.pem in
//     $DOCKER_CERT_PATH, else $DOCKER_CONFIG, else ~/.docker; a default
//     certificate or key that is not there is no error (no client
//     certificate is sent), a CA that is not there is.
type TLSOptions struct {
	TLS, Verify       bool
	CACert, Cert, Key string
	// Given reports whether a flag was on the command line (nil: none).
	Given func(flag string) bool
}

// DefaultTLSOptions are the flags' defaults, from the environment.
func DefaultTLSOptions() TLSOptions {
	dir := os.Getenv("DOCKER_CERT_PATH")
	if dir == "" {
		dir = os.Getenv("DOCKER_CONFIG")
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/root"
		}
		dir = filepath.Join(home, ".docker")
	}
	return TLSOptions{
		TLS:    os.Getenv("DOCKER_TLS") != "",
		Verify: os.Getenv("DOCKER_TLS_VERIFY") != "",
		CACert: filepath.Join(dir, "ca.pem"),
		Cert:   filepath.Join(dir, "cert.pem"),
		Key:    filepath.Join(dir, "key.pem"),
	}
}

func (o TLSOptions) given(flag string) bool { return o.Given != nil && o.Given(flag) }

// Enabled reports whether the CLI speaks TLS to the daemon.
func (o TLSOptions) Enabled() bool { return o.TLS || o.Verify || o.given("tlsverify") }

// ClientConfig is the TLS the CLI speaks, nil when it is off.
func (o TLSOptions) ClientConfig() (*tls.Config, error) {
	if !o.Enabled() {
		return nil, nil
	}
	// go-connections' defaults are Docker's: TLS 1.2 at least, its ciphers.
	c := tlsconfig.ClientDefault()
	c.InsecureSkipVerify = !o.Verify
	if o.CACert != "" {
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", o.CACert)
		}
		c.RootCAs = pool
	}
	read := func(flag, path string) ([]byte, error) {
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && !o.given(flag) {
			return nil, nil // the default file is optional
		}
		return b, err
	}
	cert, err := read("tlscert", o.Cert)
	if err != nil {
		return nil, err
	}
	key, err := read("tlskey", o.Key)
	if err != nil {
		return nil, err
	}
	if cert != nil && key != nil {
		kp, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s and key %s: %w", o.Cert, o.Key, err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}
