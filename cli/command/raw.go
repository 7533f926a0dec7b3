package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/docker/docker/client"
	"github.com/sdengine/engine/pkg/errdefs"
)

// tlsClients are the clients Cli.Client made to speak TLS: the Go client
// keeps its scheme to itself, and RawRequest must use the same.
var tlsClients sync.Map // *client.Client → struct{}

// RawRequest sends one API request through the client's own transport (so
// -H, DOCKER_HOST, unix sockets and TLS settings all apply) for the few
// calls whose bodies the Go client cannot express, such as this engine's
// Config.Init extension. body, if non-nil, is sent as JSON. A non-2xx reply
// becomes an error worded like the Go client's ("Error response from
// daemon: ...") and classified by status code.
func RawRequest(ctx context.Context, c *client.Client, method, path string, query url.Values, body any) ([]byte, error) {
	c.NegotiateAPIVersion(ctx)
	u, err := client.ParseHostURL(c.DaemonHost())
	if err != nil {
		return nil, err
	}
	target := url.URL{Scheme: "http", Host: u.Host, Path: u.Path + "/v" + c.ClientVersion() + path, RawQuery: query.Encode()}
	switch u.Scheme {
	case "unix", "npipe":
		target.Host = client.DummyHost
	case "tcp":
		if _, ok := tlsClients.Load(c); ok {
			target.Scheme = "https"
		}
	default:
		target.Scheme = u.Scheme
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("Cannot connect to the Docker daemon at %s. Is the docker daemon running?", c.DaemonHost())
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, nil
	}
	return nil, daemonError(resp.StatusCode, data)
}

// daemonError builds the error for a failed reply, preferring the JSON
// {"message": ...} the Engine API sends.
func daemonError(status int, data []byte) error {
	var m struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &m) == nil && m.Message != "" {
		msg = m.Message
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	err := errors.New("Error response from daemon: " + msg)
	switch status {
	case http.StatusNotFound:
		return errdefs.NotFound(err)
	case http.StatusBadRequest:
		return errdefs.InvalidParameter(err)
	case http.StatusConflict:
		return errdefs.Conflict(err)
	case http.StatusNotImplemented:
		return errdefs.NotImplemented(err)
	case http.StatusForbidden:
		return errdefs.Forbidden(err)
	case http.StatusServiceUnavailable:
		return errdefs.Unavailable(err)
	}
	return err
}
