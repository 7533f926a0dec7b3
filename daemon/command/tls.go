package command

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/docker/go-connections/tlsconfig"

	"github.com/sdengine/engine/daemon/config"
)

// apiTLS checks the API's hosts against the TLS settings and returns the
// TLS the TCP sockets speak (nil: plain HTTP), as Docker 27+ has it
// (docs/tls.md):
//
//   - a tcp:// host without TLS is refused unless tls=false was said
//     (flag or daemon.json), which takes plain HTTP with a warning;
//   - tlsverify (given at all) or tls turns TLS on, with the server's
//     certificate and key from tlscert and tlskey;
//   - TLS verifies clients unless tlsverify=false: only a client
//     certificate signed by the CA in tlscacert is let in;
//   - TLS 1.2 at least (go-connections' defaults, Docker's own).
//
// unix:// and fd:// hosts are never refused.
func apiTLS(cfg *config.Config) (*tls.Config, error) {
	mode := cfg.TLSMode()
	if mode == config.TLSModeUnset {
		for _, h := range cfg.Hosts {
			if strings.HasPrefix(h, "tcp://") {
				return nil, fmt.Errorf("refusing to serve the API on %s without TLS: anyone who can reach it would be root on this host. "+
					"Serve it with TLS (--tlsverify --tlscacert CA --tlscert CERT --tlskey KEY; see https://docs.docker.com/go/api-security/), "+
					"or give --tls=false to serve plain HTTP anyway", h)
			}
		}
	}
	if mode == config.TLSModeUnset || mode == config.TLSModeOff {
		return nil, nil
	}
	opts := tlsconfig.Options{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, ExclusiveRootPools: true}
	if mode == config.TLSModeVerify {
		if cfg.TLSCACert == "" {
			return nil, errors.New("invalid TLS configuration: --tlsverify needs the CA that signs the clients' certificates (--tlscacert)")
		}
		opts.CAFile = cfg.TLSCACert
		opts.ClientAuth = tls.RequireAndVerifyClientCert
	}
	c, err := tlsconfig.Server(opts)
	if err != nil {
		return nil, fmt.Errorf("invalid TLS configuration: %w", err)
	}
	// Attach and exec hijack the HTTP/1.1 connection: no HTTP/2.
	c.NextProtos = []string{"http/1.1"}
	return c, nil
}

// withTLS makes a TCP listener speak TLS when there is a TLS config.
func withTLS(l net.Listener, c *tls.Config) net.Listener {
	if c == nil {
		return l
	}
	return tls.NewListener(l, c)
}

// activatedWithTLS gives TLS to the TCP sockets among those systemd passed
// for host; its unix sockets stay plain, like unix:// hosts. (Docker
// wraps every passed socket, unix ones too.)
func activatedWithTLS(cfg *config.Config, host string, ls []net.Listener, c *tls.Config) []net.Listener {
	out := make([]net.Listener, 0, len(ls))
	for _, l := range ls {
		if _, isTCP := l.(*net.TCPListener); isTCP {
			warnUnverifiedTCP(cfg, host+" ("+l.Addr().String()+")")
			l = withTLS(l, c)
		}
		out = append(out, l)
	}
	return out
}

// warnUnverifiedTCP logs Docker's warnings for a TCP socket that lets in
// clients without a certificate (plain HTTP, or TLS with tlsverify=false).
func warnUnverifiedTCP(cfg *config.Config, host string) {
	if cfg.TLSMode() == config.TLSModeVerify {
		return
	}
	slog.Warn("Binding to IP address without --tlsverify is insecure and gives root access on this machine to everyone who has access to your network.", "host", host)
	slog.Warn("Binding to an IP address, even on localhost, can also give access to scripts run in a browser. Be safe out there!", "host", host)
}
