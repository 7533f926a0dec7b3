package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/api/server/backend"
	buildrouter "github.com/sdengine/engine/api/server/router/build"
	containerrouter "github.com/sdengine/engine/api/server/router/container"
	networkrouter "github.com/sdengine/engine/api/server/router/network"
	pluginrouter "github.com/sdengine/engine/api/server/router/plugin"
	volumerouter "github.com/sdengine/engine/api/server/router/volume"
	"github.com/sdengine/engine/pkg/errdefs"

	volumetypes "github.com/docker/docker/api/types/volume"
)

// fakeEngine has one container, "ctr", and the networks host and none;
// the methods the tests do not reach panic (nil embedded interfaces).
type fakeEngine struct {
	backend.Containers
	backend.Builder
	backend.Volumes
}

func (fakeEngine) VolumeCreate(_ context.Context, opts volumetypes.CreateOptions) (*volumetypes.Volume, error) {
	return &volumetypes.Volume{Name: opts.Name, Driver: "local", Scope: "local"}, nil
}

func (fakeEngine) ContainerInspect(_ context.Context, name string, _ bool) (*backend.ContainerInspect, error) {
	switch name {
	case "ctr":
		return &backend.ContainerInspect{}, nil
	case "":
		return nil, errdefs.InvalidParameter(fmt.Errorf("no container name or ID given"))
	}
	return nil, errdefs.NotFound(fmt.Errorf("No such container: %s", name))
}

func (e fakeEngine) ContainerUpdate(ctx context.Context, name string, _ *containertypes.UpdateConfig) (containertypes.UpdateResponse, error) {
	_, err := e.ContainerInspect(ctx, name, false)
	return containertypes.UpdateResponse{}, err
}

func (fakeEngine) ExecStart(_ context.Context, id string, _ containertypes.ExecStartOptions, _ backend.StreamFunc) error {
	return errdefs.NotFound(fmt.Errorf("No such exec instance: %s", id))
}

func (fakeEngine) NetworkList(context.Context, filters.Args) ([]network.Summary, error) {
	return []network.Summary{{Name: "host"}, {Name: "none"}}, nil
}

func (fakeEngine) NetworkInspect(_ context.Context, ref string) (network.Inspect, error) {
	if ref == "host" || ref == "none" {
		return network.Inspect{Name: ref, Scope: "local"}, nil
	}
	return network.Inspect{}, errdefs.NotFound(fmt.Errorf("network %s not found", ref))
}

func (fakeEngine) NetworkCreate(context.Context, network.CreateRequest) (network.CreateResponse, error) {
	return network.CreateResponse{}, errdefs.NotImplemented(fmt.Errorf("not in this test"))
}

func (fakeEngine) NetworkRemove(context.Context, string) error { return nil }

func (fakeEngine) NetworkConnect(context.Context, string, string, *network.EndpointSettings) error {
	return errdefs.NotImplemented(fmt.Errorf("not in this test"))
}

func (fakeEngine) NetworkDisconnect(context.Context, string, string, bool) error {
	return errdefs.NotImplemented(fmt.Errorf("not in this test"))
}

func (fakeEngine) NetworksPrune(context.Context, filters.Args) (*network.PruneReport, error) {
	return &network.PruneReport{}, nil
}

func engineHandler() http.Handler {
	e := fakeEngine{}
	return New(containerrouter.New(e), networkrouter.New(e), volumerouter.New(e), pluginrouter.New(), buildrouter.New(e)).Handler()
}

func postBody(h http.Handler, target, ct, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Every POST endpoint that takes a JSON body refuses a malformed one with
// Docker's 400 before it looks anything up, built or not (moby's
// TestContainerInvalidJSON, TestNetworkInvalidJSON, TestVolumesInvalidJSON,
// TestPluginInvalidJSON); an empty body is never a 5xx where Docker
// answers without one.
func TestMalformedBodiesAre400(t *testing.T) {
	h := engineHandler()
	for _, c := range []struct {
		target    string
		empty     int // the status for an empty body
		wellShape string
	}{
		{"/commit", http.StatusBadRequest, "{}"},
		{"/containers/create", http.StatusBadRequest, "{}"},
		{"/containers/foobar/exec", http.StatusBadRequest, "{}"},
		{"/containers/foobar/update", http.StatusNotFound, "{}"},
		{"/exec/foobar/start", http.StatusNotFound, "{}"},
		{"/networks/create", http.StatusBadRequest, "{}"},
		{"/networks/bridge/connect", http.StatusNotFound, "{}"},
		{"/networks/bridge/disconnect", http.StatusNotFound, "{}"},
		// An empty body asks for an anonymous volume.
		{"/volumes/create", http.StatusCreated, "{}"},
		{"/plugins/foobar/set", http.StatusNotFound, "[]"},
		{"/plugins/foobar/upgrade", http.StatusBadRequest, "[]"},
		{"/plugins/pull", http.StatusBadRequest, "[]"},
	} {
		for _, m := range []struct{ name, ct, body, want string }{
			{"content type", "text/plain", c.wellShape, "unsupported Content-Type header (text/plain): must be 'application/json'"},
			{"invalid", "application/json", "{invalid json", "invalid JSON: invalid character 'i' looking for beginning of object key string"},
			{"trailing", "application/json", c.wellShape + " trailing content", "unexpected content after JSON"},
		} {
			rec := postBody(h, "/v1.51"+c.target, m.ct, m.body)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), m.want) {
				t.Errorf("%s, %s: %d %s, want 400 %q", c.target, m.name, rec.Code, rec.Body.String(), m.want)
			}
		}
		if rec := postBody(h, "/v1.51"+c.target, "application/json", ""); rec.Code != c.empty {
			t.Errorf("%s, empty body: %d %s, want %d", c.target, rec.Code, rec.Body.String(), c.empty)
		}
	}
}

// A well-formed request to an endpoint that is not built, about an object
// that exists, is the 501 that names it.
func TestWellFormedUnbuiltIs501(t *testing.T) {
	h := engineHandler()
	for _, c := range []struct{ target, body string }{
		{"/plugins/pull?remote=vieux/sshfs", `[]`},
	} {
		rec := postBody(h, "/v1.51"+c.target, "application/json", c.body)
		path, _, _ := strings.Cut(c.target, "?")
		want := "POST /v1.51" + path + " is not implemented by this engine yet"
		if rec.Code != http.StatusNotImplemented || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d %s, want 501 %q", c.target, rec.Code, rec.Body.String(), want)
		}
	}
}

// What Docker refuses whatever the network driver is refused the same way.
func TestNetworkRefusals(t *testing.T) {
	h := engineHandler()
	for _, c := range []struct {
		method, target, body string
		code                 int
		want                 string
	}{
		{"POST", "/networks/create", `{"Name":"host"}`, http.StatusForbidden, "operation is not permitted on predefined host network"},
		{"POST", "/networks/create", `{"Name":"bridge"}`, http.StatusForbidden, "operation is not permitted on predefined bridge network"},
		{"DELETE", "/networks/none", "", http.StatusForbidden, "none is a pre-defined network and cannot be removed"},
		{"DELETE", "/networks/mynet", "", http.StatusNotFound, "network mynet not found"},
		{"GET", "/networks/mynet", "", http.StatusNotFound, "network mynet not found"},
		{"GET", "/networks/host?scope=swarm", "", http.StatusNotFound, "network host not found"},
	} {
		req := httptest.NewRequest(c.method, "/v1.51"+c.target, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s %s: %d %s, want %d %q", c.method, c.target, rec.Code, rec.Body.String(), c.code, c.want)
		}
	}
	for _, target := range []string{"/v1.51/networks", "/v1.51/networks/", "/networks/host"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"Name":"host"`) {
			t.Errorf("GET %s: %d %s", target, rec.Code, rec.Body.String())
		}
	}
}
