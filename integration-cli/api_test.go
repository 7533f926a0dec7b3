//go:build integration

package integrationcli

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func apiDo(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", shared.Sock)
	}}}
	req, _ := http.NewRequest(method, "http://d"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAPIErrors(t *testing.T) {
	cases := []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{"GET", "/_ping", "", 200, "OK"},
		{"GET", "/v1.51/version", "", 200, `"ApiVersion":"1.51"`},
		{"GET", "/v1.99/version", "", 400, "too new"},
		{"GET", "/v1.12/version", "", 400, "too old"},
		{"POST", "/v1.44/containers/create", "{not json", 400, "invalid JSON"},
		{"POST", "/v1.44/containers/create", `{"Image":"busybox","HostConfig":{"Memory":1}}`, 400, "Minimum memory"},
		{"POST", "/v1.44/containers/create", `{"Image":"nope:nope"}`, 404, "No such image: nope:nope"},
		{"POST", "/v1.44/containers/create", `{"Image":"busybox","Init":"upstart"}`, 400, "init system"},
		{"GET", "/v1.44/containers/nosuch/json", "", 404, "No such container: nosuch"},
		{"POST", "/v1.44/containers/nosuch/start", "", 404, "No such container: nosuch"},
		{"POST", "/v1.44/containers/create?name=bad/name", `{"Image":"busybox"}`, 400, "Invalid container name"},
		{"GET", "/v1.44/networks", "", 200, `"Name":"host"`},
		{"GET", "/v1.44/volumes", "", 200, `"Volumes":`},
		{"GET", "/v1.44/services", "", 501, `"GET /v1.44/services is not implemented`},
		{"GET", "/v1.44/events?filters=%7B%22nosuch%22%3A%7B%22x%22%3Atrue%7D%7D", "", 400, "invalid filter 'nosuch'"},
		{"GET", "/v1.44/events?since=20&until=10", "", 400, "cannot be after `until`"},
		{"GET", "/v1.51/containers/abc/export", "", 404, "No such container: abc"},
		{"GET", "/v1.44/no/such/endpoint", "", 404, `{"message":"page not found"}`},
		{"DELETE", "/v1.44/version", "", 404, `{"message":"page not found"}`},
		{"PUT", "/v1.44/containers/nosuch/start", "", 404, `{"message":"page not found"}`},
		{"OPTIONS", "/v1.44/containers/json", "", 200, ""},
		{"GET", "/v1.44/containers/json?filters=%7Bbad", "", 400, "invalid filters"},
		// A pull that needs no registry to fail (a test never reaches one
		// outside the host, not even through DNS).
		{"POST", "/v1.44/images/create?fromImage=Bad:Name", "", 400, "invalid reference format"},
	}
	for _, c := range cases {
		status, body := apiDo(t, c.method, c.path, c.body)
		if status != c.status || !strings.Contains(body, c.msg) {
			t.Errorf("%s %s: got %d %s; want %d containing %q", c.method, c.path, status, body, c.status, c.msg)
		}
	}
	// The daemon is still there.
	if status, _ := apiDo(t, "GET", "/_ping", ""); status != 200 {
		t.Fatal("daemon gone after bad requests")
	}
}

func TestUnknownFlag(t *testing.T) {
	r := shared.CLI("run", "--no-such-flag", "busybox")
	if r.Code != 125 || !strings.Contains(r.Stderr, "unknown flag") {
		t.Fatalf("unknown flag: %s", r)
	}
}

func TestInfoAndVersionThroughStockCLI(t *testing.T) {
	r := shared.Stock("version", "--format", "{{.Server.APIVersion}}")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) == "" {
		t.Fatalf("stock version: %s", r)
	}
	r = shared.Stock("info", "--format", "{{.Driver}} {{.OSType}} {{.Swarm.LocalNodeState}}")
	if r.Code != 0 || !strings.Contains(r.Stdout, "linux inactive") {
		t.Fatalf("stock info: %s", r)
	}
	// The built-in drivers are listed as plugins, as Docker lists its own.
	r = shared.Stock("info")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Volume: local\n") || !strings.Contains(r.Stdout, "Network: bridge host null\n") {
		t.Errorf("stock info plugins: %s", r)
	}
}

// Docker prints "Swarm: inactive" between the plugins and the runtimes;
// both CLIs must, from the API's Swarm.LocalNodeState.
func TestInfoSwarmInactive(t *testing.T) {
	for name, r := range map[string]Result{"stock": shared.Stock("info"), "ours": shared.CLI("info")} {
		if r.Code != 0 || !strings.Contains(r.Stdout, "\n Swarm: inactive\n Runtimes: ") {
			t.Errorf("%s docker info has no \"Swarm: inactive\" before the runtimes: %s", name, r)
		}
		if strings.Contains(r.Stdout, "NodeID") {
			t.Errorf("%s docker info prints node details for an inactive node: %s", name, r)
		}
	}
	r := shared.CLI("info", "--format", "{{.Swarm.LocalNodeState}}")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "inactive" {
		t.Errorf("our info --format: %s", r)
	}
}
