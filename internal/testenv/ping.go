package testenv

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// PingUnix asks the Engine API on a unix socket for /_ping and returns the
// answer's body.
func PingUnix(sock string) (string, error) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	resp, err := hc.Get("http://d/_ping")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
