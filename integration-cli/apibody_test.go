//go:build integration

package integrationcli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	networktypes "github.com/docker/docker/api/types/network"
)

// apiPost sends body with the given Content-Type ("" for none).
func apiPost(t *testing.T, path, contentType, body string) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", shared.Sock)
	}}}
	req, _ := http.NewRequest(http.MethodPost, "http://d"+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A malformed body is Docker's 400 on every endpoint that takes JSON, built
// or not, before anything is looked up; a well-formed request to one that
// is not built is still its 501.
func TestAPIMalformedBodies(t *testing.T) {
	id := createAPI(t, "1.51", `{"Image":"busybox","Cmd":["true"]}`)
	for _, ep := range []string{
		"/commit", "/containers/create", "/containers/nosuch/exec", "/containers/nosuch/update", "/exec/nosuch/start",
		"/networks/create", "/networks/bridge/connect", "/volumes/create", "/plugins/nosuch/set", "/plugins/pull",
	} {
		value := "{}"
		if strings.HasPrefix(ep, "/plugins/") {
			value = "[]" // their bodies are arrays
		}
		for _, c := range []struct{ ct, body, want string }{
			{"text/plain", value, "unsupported Content-Type header (text/plain): must be 'application/json'"},
			{"application/json", "{invalid json", "invalid JSON: invalid character 'i' looking for beginning of object key string"},
			{"application/json", value + " trailing content", "unexpected content after JSON"},
		} {
			if code, out := apiPost(t, "/v1.51"+ep, c.ct, c.body); code != 400 || !strings.Contains(out, c.want) {
				t.Errorf("%s %q: %d %s, want 400 %q", ep, c.body, code, out, c.want)
			}
		}
	}
	for _, c := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/containers/" + id + "/update", `{"Memory":0}`, 200, `"Warnings"`},
		{"/containers/nosuch/update", "", 404, "No such container: nosuch"},
		{"/networks/host/connect", `{"Container":"` + id + `"}`, 400, "container cannot be disconnected from host network or connected to host network"},
		{"/networks/bridge/connect", "", 404, "network bridge not found"},
		{"/volumes/create", `{"Name":"v"}`, 400, "volume name is too short"},
	} {
		if code, out := apiPost(t, "/v1.51"+c.path, "application/json", c.body); code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%s: %d %s, want %d %q", c.path, code, out, c.code, c.want)
		}
	}
}

// GET /networks lists host and none, and a host container's endpoint names
// the network's ID.
func TestNetworkListBuiltin(t *testing.T) {
	code, out := apiDo(t, "GET", "/v1.51/networks/", "")
	var list []networktypes.Summary
	if code != 200 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].Name != "host" || list[1].Name != "none" {
		t.Fatalf("GET /networks/: %d %s", code, out)
	}
	id := createAPI(t, "1.51", `{"Image":"busybox","Cmd":["true"],"HostConfig":{"NetworkMode":"host"}}`)
	if got := inspectAPI(t, "1.51", id).NetworkSettings.Networks["host"].NetworkID; got != list[0].ID {
		t.Errorf("container's host endpoint: NetworkID %q, want %q", got, list[0].ID)
	}
	if code, out := apiDo(t, "DELETE", "/v1.51/networks/host", ""); code != 403 || !strings.Contains(out, "pre-defined network") {
		t.Errorf("DELETE /networks/host: %d %s", code, out)
	}
}

// Annotations are kept; list shows them to clients of API 1.46 and later,
// and an empty key is refused with Docker's message.
func TestAnnotationsByVersion(t *testing.T) {
	id := createAPI(t, "1.51", `{"Image":"busybox","Cmd":["true"],"HostConfig":{"Annotations":{"foo":"bar"}}}`)
	if got := inspectAPI(t, "1.51", id).HostConfig.Annotations; got["foo"] != "bar" {
		t.Errorf("inspect: Annotations %v", got)
	}
	for _, c := range []struct {
		version string
		want    bool
	}{{"1.46", true}, {"1.44", false}} {
		code, out := apiDo(t, "GET", "/v"+c.version+"/containers/json?all=1&filters=%7B%22id%22%3A%5B%22"+id+"%22%5D%7D", "")
		var list []containertypes.Summary
		if code != 200 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
			t.Fatalf("list at %s: %d %s", c.version, code, out)
		}
		if got := list[0].HostConfig.Annotations["foo"] == "bar"; got != c.want {
			t.Errorf("list at %s: Annotations %v", c.version, list[0].HostConfig.Annotations)
		}
	}
	code, out := apiDo(t, "POST", "/v1.51/containers/create", `{"Image":"busybox","HostConfig":{"Annotations":{"":"a"}}}`)
	if code != 400 || !strings.Contains(out, "invalid Annotations: the empty string is not permitted as an annotation key") {
		t.Errorf("empty annotation key: %d %s", code, out)
	}
}
