package distribution

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/docker/docker/api/types/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/sdengine/engine/pkg/errdefs"
)

// loginHost is the registry an AuthConfig's ServerAddress names, Docker
// Hub when empty ("https://index.docker.io/v1/" is the CLI's name for it).
func loginHost(addr string) (string, error) {
	if addr == "" {
		return dockerHub, nil
	}
	if !strings.Contains(addr, "://") {
		addr = "https://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return "", errdefs.InvalidParameter(fmt.Errorf("unable to parse server address: %q", addr))
	}
	switch u.Host {
	case "index.docker.io", "registry-1.docker.io", dockerHub:
		return dockerHub, nil
	}
	return u.Host, nil
}

// Login checks ac's credentials against its registry (never a mirror):
// a GET /v2/ authenticated as the registry asks, basic or token. The
// answer is Docker's: "Login Succeeded", or 401 "unauthorized: ...".
func (s *Service) Login(ctx context.Context, ac registry.AuthConfig) (string, error) {
	host, err := loginHost(ac.ServerAddress)
	if err != nil {
		return "", err
	}
	reg, err := s.registryFor(host)
	if err != nil {
		return "", err
	}
	ep := endpoint{host: host}
	base := s.transportFor(host)
	rt, err := transport.NewWithContext(ctx, reg, authenticator(ac, ep), base, nil)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || hasCode(te, transport.UnauthorizedErrorCode)) {
			return "", errdefs.Unauthorized(errors.New(registryCause(te)))
		}
		return "", fmt.Errorf("login to %s: %w", host, err)
	}
	schemes := []string{"https"}
	if s.isInsecure(host) {
		schemes = append(schemes, "http")
	}
	var lastErr error
	for _, scheme := range schemes {
		u := scheme + "://" + reg.RegistryStr() + "/v2/"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return "", err
		}
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			var te *transport.Error
			if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || hasCode(te, transport.UnauthorizedErrorCode)) {
				return "", errdefs.Unauthorized(errors.New(registryCause(te)))
			}
			slog.Info("login: endpoint failed, trying the next", "endpoint", u, "err", err)
			lastErr = err
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return "Login Succeeded", nil
		case http.StatusUnauthorized:
			return "", errdefs.Unauthorized(fmt.Errorf("login attempt to %s failed with status: %d %s", u, resp.StatusCode, http.StatusText(resp.StatusCode)))
		}
		lastErr = fmt.Errorf("login attempt to %s failed with status: %d %s", u, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return "", lastErr
}
