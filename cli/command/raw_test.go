package command

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/client"
	"github.com/sdengine/engine/pkg/errdefs"
)

// fakeDaemon serves handler on a unix socket and returns a client for it.
func fakeDaemon(t *testing.T, handler http.HandlerFunc) *client.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	c, err := client.NewClientWithOpts(client.WithHost("unix://"+sock), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRawRequest(t *testing.T) {
	var gotPath, gotBody, gotType string
	c := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			w.Header().Set("Api-Version", "1.43")
			w.Write([]byte("OK"))
			return
		}
		b, _ := io.ReadAll(r.Body)
		gotPath, gotBody, gotType = r.URL.RequestURI(), string(b), r.Header.Get("Content-Type")
		switch r.URL.Query().Get("name") {
		case "missing":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"No such image: nope:latest"}`))
		case "conflict":
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte("plain text conflict\n"))
		default:
			w.Write([]byte(`{"Id":"abc"}`))
		}
	})
	ctx := context.Background()
	data, err := RawRequest(ctx, c, "POST", "/containers/create", map[string][]string{"name": {"x"}}, map[string]string{"Init": "systemd"})
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"Id":"abc"}` || gotPath != "/v1.43/containers/create?name=x" || gotBody != `{"Init":"systemd"}` || gotType != "application/json" {
		t.Fatalf("data %s path %s body %s type %s", data, gotPath, gotBody, gotType)
	}
	_, err = RawRequest(ctx, c, "POST", "/containers/create", map[string][]string{"name": {"missing"}}, struct{}{})
	if err == nil || err.Error() != "Error response from daemon: No such image: nope:latest" || !errdefs.IsNotFound(err) {
		t.Fatalf("404: %v", err)
	}
	_, err = RawRequest(ctx, c, "GET", "/x", map[string][]string{"name": {"conflict"}}, nil)
	if err == nil || err.Error() != "Error response from daemon: plain text conflict" || !errdefs.IsConflict(err) {
		t.Fatalf("409: %v", err)
	}
}

func TestRawRequestNoDaemon(t *testing.T) {
	c, err := client.NewClientWithOpts(client.WithHost("unix:///nonexistent/d.sock"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = RawRequest(context.Background(), c, "GET", "/info", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon at unix:///nonexistent/d.sock") {
		t.Fatalf("got %v", err)
	}
}
