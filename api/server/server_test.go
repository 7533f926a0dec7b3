package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sdengine/engine/api"
	"github.com/sdengine/engine/api/server/router"
)

// fakeRouter serves a few real-looking routes so that "known path, other
// method" can be told from "unknown path".
type fakeRouter struct{}

func ok(_ context.Context, w http.ResponseWriter, _ *http.Request, vars map[string]string) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := io.WriteString(w, "ok "+vars["name"])
	return err
}

func (fakeRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodGet, Path: "/_ping", Handler: ok},
		{Method: http.MethodHead, Path: "/_ping", Handler: ok},
		{Method: http.MethodGet, Path: "/version", Handler: ok},
		{Method: http.MethodGet, Path: "/containers/json", Handler: ok},
		{Method: http.MethodGet, Path: "/containers/{name:.*}/json", Handler: ok},
		{Method: http.MethodPost, Path: "/containers/{name:.*}/start", Handler: ok},
		{Method: http.MethodDelete, Path: "/containers/{name:.*}", Handler: ok},
	}
}

func serve(t *testing.T, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	New(fakeRouter{}).Handler().ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// message decodes Docker's error body, insisting on its exact form.
func message(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body) != 1 {
		t.Fatalf("body %q is not {\"message\": ...}: %v", rec.Body.String(), err)
	}
	return body["message"]
}

// Measured against Docker 20.10's dockerd: an unknown path and a known path
// asked with a method it does not serve are both 404 with exactly this body
// (29 bytes with its newline) and no Api-Version/Server headers.
func TestUnknownPathsAndMethodsArePageNotFound(t *testing.T) {
	for _, c := range []struct{ method, target string }{
		{"GET", "/nonexistent"},
		{"GET", "/"},
		{"GET", "/v1.51/nonexistent"},
		{"GET", "/v1.99/nonexistent"}, // the path is judged before the version
		{"GET", "/vabc/version"},
		{"GET", "/version/"},
		{"GET", "/v1.51/containers/abc/start"},
		{"DELETE", "/_ping"},
		{"POST", "/_ping"},
		{"PUT", "/version"},
		{"DELETE", "/v1.51/version"},
		{"POST", "/v1.51/containers/json"},
		{"PATCH", "/v1.51/containers/abc/start"},
		{"PUT", "/v1.51/containers/create"},
		{"POST", "/v1.51/containers/abc/export"}, // export is GET only
		{"POST", "/v1.51/networks/abc"},
	} {
		rec := serve(t, c.method, c.target)
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", c.method, c.target, rec.Code)
		}
		if got := rec.Body.String(); got != "{\"message\":\"page not found\"}\n" {
			t.Errorf("%s %s: body %q", c.method, c.target, got)
		}
		if msg := message(t, rec); msg != "page not found" {
			t.Errorf("%s %s: message %q", c.method, c.target, msg)
		}
		if v := rec.Header().Get("Api-Version"); v != "" {
			t.Errorf("%s %s: Api-Version %q on a 404 Docker sends without it", c.method, c.target, v)
		}
	}
}

func TestHeadOnAGetOnlyPathIs404WithoutBody(t *testing.T) {
	rec := serve(t, "HEAD", "/v1.51/version")
	if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("HEAD /v1.51/version: %d %q, want 404 application/json", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec := serve(t, "HEAD", "/_ping"); rec.Code != http.StatusOK {
		t.Errorf("HEAD /_ping: %d, want 200", rec.Code)
	}
}

func TestOptionsAnswersEmpty200(t *testing.T) {
	for _, target := range []string{"/v1.51/version", "/nonexistent", "/_ping", "/v1.41/containers/abc/json"} {
		rec := serve(t, "OPTIONS", target)
		if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Errorf("OPTIONS %s: %d %q, want an empty 200", target, rec.Code, rec.Body.String())
		}
		if rec.Header().Get("Api-Version") != api.DefaultVersion {
			t.Errorf("OPTIONS %s: no Api-Version header", target)
		}
	}
	rec := serve(t, "OPTIONS", "/v1.99/foo")
	if rec.Code != http.StatusBadRequest || !strings.Contains(message(t, rec), "too new") {
		t.Errorf("OPTIONS /v1.99/foo: %d %q, want 400 too new", rec.Code, rec.Body.String())
	}
}

func TestNotImplementedNamesThePathAsSent(t *testing.T) {
	for _, c := range []struct{ method, target, want string }{
		{"GET", "/v1.51/distribution/busybox/json", "GET /v1.51/distribution/busybox/json is not implemented by this engine yet"},
		{"GET", "/distribution/busybox/json", "GET /distribution/busybox/json is not implemented by this engine yet"},
		{"GET", "/v1.44/distribution/a%2Fb/json?x=1", "GET /v1.44/distribution/a%2Fb/json is not implemented by this engine yet"},
		{"GET", "/v1.51/services", "GET /v1.51/services is not implemented by this engine yet"},
		{"GET", "/v1.51/nodes", "GET /v1.51/nodes is not implemented by this engine yet"},
		{"GET", "/v1.51/tasks?filters={}", "GET /v1.51/tasks is not implemented by this engine yet"},
		{"GET", "/v1.51/secrets", "GET /v1.51/secrets is not implemented by this engine yet"},
		{"POST", "/build/prune", "POST /build/prune is not implemented by this engine yet"},
	} {
		rec := serve(t, c.method, c.target)
		if rec.Code != http.StatusNotImplemented {
			t.Errorf("%s %s: status %d, want 501", c.method, c.target, rec.Code)
			continue
		}
		if c.method == "HEAD" {
			continue // no body to read; the status is the answer
		}
		if msg := message(t, rec); msg != c.want {
			t.Errorf("%s %s: message %q, want %q", c.method, c.target, msg, c.want)
		}
	}
}

// An unbuilt endpoint is a routed endpoint: the version check comes first.
func TestNotImplementedChecksTheVersion(t *testing.T) {
	rec := serve(t, "GET", "/v1.99/distribution/busybox/json")
	if rec.Code != http.StatusBadRequest || !strings.Contains(message(t, rec), "client version 1.99 is too new") {
		t.Errorf("got %d %q, want 400 too new", rec.Code, rec.Body.String())
	}
	rec = serve(t, "GET", "/v1.51/distribution/busybox/json")
	if rec.Header().Get("Api-Version") != api.DefaultVersion || rec.Header().Get("Server") == "" {
		t.Errorf("501 without the version headers: %v", rec.Header())
	}
}

func TestKnownRoutesStillServe(t *testing.T) {
	for _, c := range []struct{ method, target, want string }{
		{"GET", "/_ping", "ok "},
		{"GET", "/v1.51/containers/abc/json", "ok abc"},
		{"GET", "/v1.51/containers/a/b/json", "ok a/b"},
		{"POST", "/v1.24/containers/abc/start", "ok abc"},
		{"DELETE", "/v1.51/containers/abc", "ok abc"},
	} {
		rec := serve(t, c.method, c.target)
		if rec.Code != http.StatusOK || rec.Body.String() != c.want {
			t.Errorf("%s %s: %d %q, want 200 %q", c.method, c.target, rec.Code, rec.Body.String(), c.want)
		}
	}
}
