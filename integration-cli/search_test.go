//go:build integration

package integrationcli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lines are out's non-empty lines.
func lines(out string) []string {
	var l []string
	for _, s := range strings.Split(out, "\n") {
		if strings.TrimSpace(s) != "" {
			l = append(l, s)
		}
	}
	return l
}

// TestRegistrySearch searches a plain HTTP distribution registry (no v1
// search endpoint: its catalog, filtered by the term) with both CLIs:
// the table, --limit, --format, --no-trunc and --filter, and Docker's
// errors for a bad filter or limit.
func TestRegistrySearch(t *testing.T) {
	reg := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	for _, repo := range []string{"tools/busybox", "apps/webserver", "apps/busybox-extra"} {
		d.MustCLI(t, "tag", "busybox", reg.Addr+"/"+repo+":v1")
		d.MustCLI(t, "push", reg.Addr+"/"+repo+":v1")
	}
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		r := cli("search", reg.Addr+"/busy")
		l := lines(r.Stdout)
		if r.Code != 0 || len(l) != 3 || !strings.HasPrefix(l[0], "NAME") || !strings.Contains(l[0], "DESCRIPTION") || !strings.Contains(l[0], "STARS") ||
			!strings.Contains(r.Stdout, reg.Addr+"/tools/busybox") || !strings.Contains(r.Stdout, reg.Addr+"/apps/busybox-extra") || strings.Contains(r.Stdout, "webserver") {
			t.Fatalf("search busy: %s", r)
		}
		if r := cli("search", "--format", "{{.Name}}", reg.Addr+"/WEB"); r.Code != 0 || strings.TrimSpace(r.Stdout) != reg.Addr+"/apps/webserver" {
			t.Fatalf("search --format WEB: %s", r)
		}
		if r := cli("search", "--limit", "1", "--format", "{{.Name}}", reg.Addr+"/"); r.Code != 0 || len(lines(r.Stdout)) != 1 {
			t.Fatalf("search --limit 1: %s", r)
		}
		if r := cli("search", "--no-trunc", "--format", "{{json .}}", reg.Addr+"/tools"); r.Code != 0 || !strings.Contains(r.Stdout, `"Name":"`+reg.Addr+`/tools/busybox"`) {
			t.Fatalf("search --no-trunc json: %s", r)
		}
		if r := cli("search", "--filter", "is-official=true", "--format", "{{.Name}}", reg.Addr+"/busy"); r.Code != 0 || strings.TrimSpace(r.Stdout) != "" {
			t.Fatalf("search is-official=true: %s", r)
		}
		if r := cli("search", "--filter", "stars=0", "--format", "{{.Name}}", reg.Addr+"/busy"); r.Code != 0 || len(lines(r.Stdout)) != 2 {
			t.Fatalf("search stars=0: %s", r)
		}
		if r := cli("search", "--filter", "foo=bar", reg.Addr+"/busy"); r.Code == 0 || !strings.Contains(r.Stderr, "invalid filter 'foo'") {
			t.Fatalf("search with a bad filter: %s", r)
		}
		if r := cli("search", "--limit", "101", reg.Addr+"/busy"); r.Code == 0 || !strings.Contains(r.Stderr, "limit 101 is outside the range of [1, 100]") {
			t.Fatalf("search --limit 101: %s", r)
		}
	})
}

// TestRegistrySearchAuth: the catalog of a registry with basic auth
// behind a self-signed certificate needs the user's login, sent by both
// CLIs from their credential store.
func TestRegistrySearchAuth(t *testing.T) {
	reg := startRegistry(t, true)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/private/busybox:v1"
	d.MustCLI(t, "tag", "busybox", repo)
	cfg := t.TempDir()
	if r := runWithConfig(ourCLI, d, cfg, reg.Pass+"\n", "login", "-u", reg.User, "--password-stdin", reg.Addr); r.Code != 0 {
		t.Fatalf("login: %s", r)
	}
	if r := runWithConfig(ourCLI, d, cfg, "", "push", repo); r.Code != 0 {
		t.Fatalf("push: %s", r)
	}
	// Only ours: the stock CLI answers a 401 by prompting for a login.
	if r := runWithConfig(ourCLI, d, t.TempDir(), "", "search", reg.Addr+"/busy"); r.Code == 0 || !strings.Contains(r.Stderr, "unauthorized") {
		t.Fatalf("search without login: %s", r)
	}
	for _, bin := range []string{ourCLI, stockCLI} {
		if r := runWithConfig(bin, d, cfg, "", "search", "--format", "{{.Name}}", reg.Addr+"/busy"); r.Code != 0 || strings.TrimSpace(r.Stdout) != reg.Addr+"/private/busybox" {
			t.Fatalf("%s search after login: %s", bin, r)
		}
	}
}

// TestRegistrySearchUnsupported: a server with neither the v1 search
// endpoint nor the v2 catalog gets an error that says so and names it.
func TestRegistrySearchUnsupported(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		r := cli("search", host+"/busybox")
		if r.Code == 0 || !strings.Contains(r.Stderr, "registry "+host+" does not support search") {
			t.Fatalf("search of a server without search: %s", r)
		}
	})
}

// TestRegistrySearchList: with --add-registry A and --block-registry B
// (and Docker Hub blocked, so nothing leaves the machine), an unqualified
// name is pulled from A, saying so, and then runs by that name; a name
// none has fails naming each registry tried; B is refused for pull, push
// and search with a 403 naming it.
func TestRegistrySearchList(t *testing.T) {
	regA := startRegistry(t, false)
	regB := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	d.MustCLI(t, "tag", "busybox", regA.Addr+"/listed:latest")
	d.MustCLI(t, "push", regA.Addr+"/listed:latest")
	d.MustCLI(t, "tag", "busybox", regB.Addr+"/onlyb:latest")
	d.MustCLI(t, "push", regB.Addr+"/onlyb:latest")
	d.MustCLI(t, "rmi", regA.Addr+"/listed:latest", regB.Addr+"/onlyb:latest")

	d.Stop(t)
	d.Args = append(d.Args, "--add-registry", regA.Addr, "--block-registry", regB.Addr, "--block-registry", "docker.io")
	d.Start(t)

	r := d.Stock("pull", "listed")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Trying to pull repository "+regA.Addr+"/listed") ||
		!strings.Contains(r.Stdout, "Downloaded newer image for "+regA.Addr+"/listed:latest") {
		t.Fatalf("pull listed: %s", r)
	}
	if r := d.Stock("run", "--rm", "listed", "echo", "from-the-search-list"); r.Code != 0 || !strings.Contains(r.Stdout, "from-the-search-list") {
		t.Fatalf("run listed: %s", r)
	}
	if r := d.CLI("pull", "nothere"); r.Code == 0 || !strings.Contains(r.Stderr, "not found in any registry of the search list") || !strings.Contains(r.Stderr, regA.Addr+":") {
		t.Fatalf("pull nothere: %s", r)
	}
	if r := d.CLI("search", "--format", "{{.Name}}", "list"); r.Code != 0 || strings.TrimSpace(r.Stdout) != regA.Addr+"/listed" {
		t.Fatalf("search of the search list: %s", r)
	}
	blocked := "registry " + regB.Addr + " is blocked"
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		if r := cli("pull", regB.Addr+"/onlyb"); r.Code == 0 || !strings.Contains(r.Stderr, blocked) {
			t.Fatalf("pull from the blocked registry: %s", r)
		}
		if r := cli("search", regB.Addr+"/only"); r.Code == 0 || !strings.Contains(r.Stderr, blocked) {
			t.Fatalf("search of the blocked registry: %s", r)
		}
	})
	d.MustCLI(t, "tag", "busybox", regB.Addr+"/pushed:v1")
	if r := d.Stock("push", regB.Addr+"/pushed:v1"); r.Code == 0 || !strings.Contains(r.Stderr, blocked) {
		t.Fatalf("push to the blocked registry: %s", r)
	}
}

// TestRegistryCertsDir: a registry that requires a client certificate
// is reached through the daemon's certs.d directory for it (ca.crt,
// client.cert, client.key), and refused without it.
func TestRegistryCertsDir(t *testing.T) {
	reg := startRegistryTLS(t, true, true)
	certsD := t.TempDir()
	d := NewDaemon(t, "--registry-certs-dir", certsD)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	repo := reg.Addr + "/certs/busybox:v1"
	d.MustCLI(t, "tag", "busybox", repo)
	cfg := t.TempDir()
	if r := runWithConfig(ourCLI, d, cfg, reg.Pass+"\n", "login", "-u", reg.User, "--password-stdin", reg.Addr); r.Code == 0 {
		t.Fatalf("login without a client certificate: %s", r)
	}

	hostDir := filepath.Join(certsD, reg.Addr)
	if err := os.MkdirAll(hostDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{reg.Certs.CA: "ca.crt", reg.Certs.ClientCert: "client.cert", reg.Certs.ClientKey: "client.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostDir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, bin := range []string{ourCLI, stockCLI} {
		if r := runWithConfig(bin, d, cfg, reg.Pass+"\n", "login", "-u", reg.User, "--password-stdin", reg.Addr); r.Code != 0 || !strings.Contains(r.Stdout, "Login Succeeded") {
			t.Fatalf("%s login with certs.d: %s", bin, r)
		}
	}
	if r := runWithConfig(stockCLI, d, cfg, "", "push", repo); r.Code != 0 || !pushDigest.MatchString(r.Stdout) {
		t.Fatalf("push with certs.d: %s", r)
	}
	d.MustCLI(t, "rmi", repo)
	if r := runWithConfig(stockCLI, d, cfg, "", "pull", repo); r.Code != 0 {
		t.Fatalf("pull with certs.d: %s", r)
	}
	if r := runWithConfig(ourCLI, d, cfg, "", "search", "--format", "{{.Name}}", reg.Addr+"/certs"); r.Code != 0 || strings.TrimSpace(r.Stdout) != reg.Addr+"/certs/busybox" {
		t.Fatalf("search with certs.d: %s", r)
	}
	// A key without its certificate is an error that names them.
	if err := os.Remove(filepath.Join(hostDir, "client.cert")); err != nil {
		t.Fatal(err)
	}
	if r := runWithConfig(stockCLI, d, cfg, "", "pull", repo); r.Code == 0 || !strings.Contains(r.Stderr, "missing client certificate client.cert for key client.key") {
		t.Fatalf("pull with a key and no certificate: %s", r)
	}
}
