package distribution

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/registry"

	"github.com/sdengine/engine/internal/testcerts"
	"github.com/sdengine/engine/pkg/errdefs"
)

func newService(t *testing.T, cfg Config) *Service {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSearchChecksBeforeAsking(t *testing.T) {
	s := newService(t, Config{})
	for _, c := range []struct {
		o    SearchOptions
		want string
	}{
		{SearchOptions{Term: "x", Filters: filters.NewArgs(filters.Arg("foo", "bar"))}, "invalid filter 'foo'"},
		{SearchOptions{Term: "x", Filters: filters.NewArgs(filters.Arg("stars", "many"))}, "invalid filter 'stars=many'"},
		{SearchOptions{Term: "x", Filters: filters.NewArgs(filters.Arg("is-official", "maybe"))}, "invalid"},
		{SearchOptions{Term: "x", Limit: 101}, "limit 101 is outside the range of [1, 100]"},
		{SearchOptions{Term: "x", Limit: -1}, "limit -1 is outside the range of [1, 100]"},
		{SearchOptions{Term: "https://example.com/x"}, "should not have a scheme"},
	} {
		_, err := s.Search(context.Background(), c.o)
		if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a 400 with %q", c.o, err, c.want)
		}
	}
	blocked := newService(t, Config{BlockRegistries: []string{"docker.io"}})
	if _, err := blocked.Search(context.Background(), SearchOptions{Term: "fedora"}); errdefs.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("search with every registry blocked: %v", err)
	}
	// Docker: automated builds are no more; asking for them finds none
	// without asking any registry.
	res, err := s.Search(context.Background(), SearchOptions{Term: "x", Filters: filters.NewArgs(filters.Arg("is-automated", "true"))})
	if err != nil || res == nil || len(res) != 0 {
		t.Errorf("is-automated=true: %v %v", res, err)
	}
}

func TestSearchHosts(t *testing.T) {
	plain := newService(t, Config{})
	listed := newService(t, Config{AddRegistries: []string{"reg.example:5000", "https://quay.example/"}})
	for _, c := range []struct {
		s          *Service
		term, rest string
		hosts      []string
	}{
		{plain, "fedora", "fedora", []string{"docker.io"}},
		{plain, "user/app", "user/app", []string{"docker.io"}},
		{plain, "localhost/app", "app", []string{"localhost"}},
		{plain, "127.0.0.1:5000/a/b", "a/b", []string{"127.0.0.1:5000"}},
		{plain, "index.docker.io/fedora", "fedora", []string{"docker.io"}},
		{plain, "127.0.0.1:5000", "127.0.0.1:5000", []string{"docker.io"}},
		{listed, "fedora", "fedora", []string{"reg.example:5000", "quay.example", "docker.io"}},
		{listed, "quay.example/x", "x", []string{"quay.example"}},
	} {
		hosts, rest := c.s.searchHosts(c.term)
		if !reflect.DeepEqual(hosts, c.hosts) || rest != c.rest {
			t.Errorf("%s: %v %q, want %v %q", c.term, hosts, rest, c.hosts, c.rest)
		}
	}
}

// TestSearchV1 asks a server with the v1 search endpoint (a stand-in for
// Docker Hub's index: no registry on the machine has one): the query,
// basic credentials, host-qualified names, and the filters applied to
// what it answers.
func TestSearchV1(t *testing.T) {
	var gotQuery, gotUser string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/search" {
			http.NotFound(w, r)
			return
		}
		gotQuery = r.URL.RawQuery
		gotUser, _, _ = r.BasicAuth()
		w.Write([]byte(`{"num_results":3,"query":"fed","results":[
			{"name":"fedora","description":"Official Fedora","star_count":1200,"is_official":true,"is_automated":true},
			{"name":"someone/fedora-tools","description":"tools","star_count":3},
			{"name":"other/fedora","star_count":0}]}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	s := newService(t, Config{})
	res, err := s.Search(context.Background(), SearchOptions{Term: host + "/fed", Limit: 10,
		Filters: filters.NewArgs(filters.Arg("stars", "1"), filters.Arg("stars", "2")),
		Auth:    registry.AuthConfig{Username: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if gotQuery != "q=fed&n=10" || gotUser != "u" {
		t.Errorf("query %q user %q", gotQuery, gotUser)
	}
	want := []registry.SearchResult{
		{Name: host + "/fedora", Description: "Official Fedora", StarCount: 1200, IsOfficial: true},
		{Name: host + "/someone/fedora-tools", Description: "tools", StarCount: 3},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("results %+v, want %+v", res, want)
	}
	res, err = s.Search(context.Background(), SearchOptions{Term: host + "/fed", Filters: filters.NewArgs(filters.Arg("is-official", "false"))})
	if err != nil || len(res) != 2 || res[0].Name != host+"/someone/fedora-tools" {
		t.Errorf("is-official=false: %+v %v", res, err)
	}
}

func TestSearchListOrderAndBlocks(t *testing.T) {
	for _, c := range []struct {
		add, block []string
		want       []string
	}{
		{nil, nil, []string{"docker.io"}},
		{[]string{"a.example", "b.example:5000"}, nil, []string{"a.example", "b.example:5000", "docker.io"}},
		{[]string{"a.example", "a.example", "index.docker.io", "b.example"}, nil, []string{"a.example", "docker.io", "b.example"}},
		{[]string{"a.example", "b.example"}, []string{"docker.io"}, []string{"a.example", "b.example"}},
		{[]string{"a.example"}, []string{"all"}, []string{"a.example"}},
		{nil, []string{"docker.io"}, nil},
	} {
		s := newService(t, Config{AddRegistries: c.add, BlockRegistries: c.block})
		if got := s.searchList(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("add %v block %v: %v, want %v", c.add, c.block, got, c.want)
		}
	}
	s := newService(t, Config{AddRegistries: []string{"a.example"}, BlockRegistries: []string{"all"}})
	for host, blocked := range map[string]bool{"a.example": false, "docker.io": true, "c.example": true} {
		err := s.checkBlocked(host)
		if blocked != (err != nil) || blocked && (errdefs.HTTPStatus(err) != http.StatusForbidden || !strings.Contains(err.Error(), "registry "+host+" is blocked")) {
			t.Errorf("%s: %v", host, err)
		}
	}
	if s.SearchList() == nil || s.SearchList()[len(s.SearchList())-1] != "docker.io" {
		t.Errorf("the store's list %v must end with docker.io even when blocked", s.SearchList())
	}
	if newService(t, Config{}).SearchList() != nil {
		t.Errorf("no search list without add-registry")
	}
	for _, bad := range []Config{
		{AddRegistries: []string{"a.example/path"}},
		{AddRegistries: []string{""}},
		{BlockRegistries: []string{"UPPER CASE"}},
		{AddRegistries: []string{"a.example"}, BlockRegistries: []string{"a.example"}},
	} {
		if _, err := New(bad, nil); !errdefs.IsInvalidParameter(err) {
			t.Errorf("%+v: %v, want a 400", bad, err)
		}
	}
}

func TestPullCandidates(t *testing.T) {
	parse := func(s string) reference.Named {
		n, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	names := func(ns []reference.Named) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.String())
		}
		return out
	}
	plain := newService(t, Config{})
	listed := newService(t, Config{AddRegistries: []string{"a.example", "b.example:5000"}, BlockRegistries: []string{"c.example"}})
	hubBlocked := newService(t, Config{AddRegistries: []string{"a.example"}, BlockRegistries: []string{"docker.io"}})
	const d = "sha256:0af0078a6df3c78a97173e9ea12fd11f42cb5cc692e1a0b2ff401ebf8576261a"
	for _, c := range []struct {
		s       *Service
		ref     string
		want    []string
		viaList bool
	}{
		{plain, "fedora:40", []string{"docker.io/library/fedora:40"}, false},
		{listed, "fedora:40", []string{"a.example/fedora:40", "b.example:5000/fedora:40", "docker.io/library/fedora:40"}, true},
		{listed, "user/app@" + d, []string{"a.example/user/app@" + d, "b.example:5000/user/app@" + d, "docker.io/user/app@" + d}, true},
		{listed, "quay.example/x:1", []string{"quay.example/x:1"}, false},
		{hubBlocked, "fedora", []string{"a.example/fedora"}, true},
	} {
		got, via, err := c.s.pullCandidates(parse(c.ref))
		if err != nil || !reflect.DeepEqual(names(got), c.want) || via != c.viaList {
			t.Errorf("%s: %v %v %v, want %v %v", c.ref, names(got), via, err, c.want, c.viaList)
		}
	}
	if _, _, err := listed.pullCandidates(parse("c.example/x")); errdefs.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("pull from a blocked registry: %v", err)
	}
	if _, _, err := newService(t, Config{BlockRegistries: []string{"docker.io"}}).pullCandidates(parse("fedora")); errdefs.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("pull from blocked Docker Hub: %v", err)
	}
}

func TestAuthForCandidates(t *testing.T) {
	hub := registry.AuthConfig{Username: "u", Password: "p", ServerAddress: "https://index.docker.io/v1/"}
	if got := authFor(hub, dockerHub, dockerHub); got.Username != "u" {
		t.Errorf("Docker Hub's own credentials dropped")
	}
	if got := authFor(hub, dockerHub, "a.example"); got.Username != "" {
		t.Errorf("Docker Hub's credentials sent to another registry of the list")
	}
	other := registry.AuthConfig{Username: "u", Password: "p", ServerAddress: "a.example"}
	if got := authFor(other, dockerHub, "a.example"); got.Username != "u" {
		t.Errorf("credentials given for a.example not sent to it")
	}
}

// TestRegistryTLS reads a certs.d directory as Docker does: *.crt are
// CAs on top of the system's, *.cert/*.key client certificates, a key
// without its certificate is an error; nothing there changes nothing.
func TestRegistryTLS(t *testing.T) {
	set, err := testcerts.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	host := "registry.example:5000"
	hostDir := filepath.Join(dir, host)
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostDir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(set.CA, "ca.crt")
	copyFile(set.ClientCert, "client.cert")
	copyFile(set.ClientKey, "client.key")
	s := newService(t, Config{CertsDir: dir})
	cfg, err := s.registryTLS(host)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.InsecureSkipVerify || len(cfg.Certificates) != 1 || cfg.RootCAs == nil {
		t.Fatalf("config: skip=%v certs=%d roots=%v", cfg.InsecureSkipVerify, len(cfg.Certificates), cfg.RootCAs != nil)
	}
	serverPEM, err := os.ReadFile(set.ServerCert)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(serverPEM)
	server, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: cfg.RootCAs, DNSName: "localhost"}); err != nil {
		t.Errorf("the registry's certificate does not verify with certs.d's CA: %v", err)
	}

	// Another host: nothing of this directory.
	if cfg, err := s.registryTLS("other.example"); err != nil || cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Errorf("other host: %+v %v", cfg, err)
	}
	// Loopback stays insecure (as in Docker) but still offers its client certificate.
	if err := os.Rename(hostDir, filepath.Join(dir, "127.0.0.1:5000")); err != nil {
		t.Fatal(err)
	}
	if cfg, err := s.registryTLS("127.0.0.1:5000"); err != nil || !cfg.InsecureSkipVerify || len(cfg.Certificates) != 1 {
		t.Errorf("loopback: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "127.0.0.1:5000", "client.cert")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.registryTLS("127.0.0.1:5000"); err == nil || !strings.Contains(err.Error(), "missing client certificate client.cert for key client.key") {
		t.Errorf("key without certificate: %v", err)
	}
	if _, err := s.transportFor("127.0.0.1:5000").RoundTrip(httptest.NewRequest(http.MethodGet, "https://127.0.0.1:5000/v2/", nil)); err == nil {
		t.Errorf("a transport for a registry whose certs.d is broken must fail")
	}
	if cfg, err := s.registryTLS("docker.io"); err != nil || cfg.InsecureSkipVerify {
		t.Errorf("docker.io: %v", err)
	}
}
