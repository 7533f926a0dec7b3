//go:build integration

package integrationcli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
)

// composeProject: two services on a network of their own: web serves
// (busybox httpd) a file it writes into a named volume, as "web" and by
// the alias "webalias"; client starts after it (depends_on) and mounts the
// same volume.
const composeProject = `version: "3.8"
services:
  web:
    image: busybox
    command: ["sh", "-c", "echo hello-from-web > /data/index.html && exec httpd -f -p 80 -h /data"]
    volumes: ["shared:/data"]
    networks:
      backnet:
        aliases: ["webalias"]
  client:
    image: busybox
    command: ["sleep", "300"]
    depends_on: ["web"]
    volumes: ["shared:/shared"]
    networks: ["backnet"]
networks:
  backnet: {}
volumes:
  shared: {}
`

// TestComposeProject: docker-compose 1.29 (docker-py) drives a test
// daemon through DOCKER_HOST: up starts the project in order, the two
// services answer each other by service name and alias through the
// embedded DNS and share the named volume; down -v leaves no container,
// network, volume, veth, bridge or nft table.
func TestComposeProject(t *testing.T) {
	testenv.RequireExecutable(t, "docker-compose", "docker-compose")
	d, bridge := newBridgeDaemon(t)
	defer d.Cleanup(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), []byte(composeProject), 0o644); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("it%d", os.Getpid())
	compose := func(args ...string) (string, error) {
		cmd := exec.Command("docker-compose", append([]string{"-p", project, "--no-ansi"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "COMPOSE_INTERACTIVE_NO_CLI=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := compose("up", "-d"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s\ndaemon log:\n%s", err, out, d.Log())
	}
	downDone := false
	defer func() {
		if !downDone {
			_, _ = compose("down", "-v")
		}
	}()
	web, client := project+"_web_1", project+"_client_1"
	var ids []string
	for _, c := range []string{web, client} {
		ids = append(ids, remember(d.MustCLI(t, "inspect", "-f", "{{.Id}}", c)))
	}
	netID := strings.TrimSpace(d.MustCLI(t, "network", "inspect", "-f", "{{.Id}}", project+"_backnet"))
	// depends_on: web started first.
	ws := d.MustCLI(t, "inspect", "-f", "{{.State.StartedAt}}", web)
	cs := d.MustCLI(t, "inspect", "-f", "{{.State.StartedAt}}", client)
	wt, _ := time.Parse(time.RFC3339Nano, strings.TrimSpace(ws))
	ct, _ := time.Parse(time.RFC3339Nano, strings.TrimSpace(cs))
	if wt.IsZero() || ct.IsZero() || ct.Before(wt) {
		t.Errorf("client started at %s, before web (%s)", cs, ws)
	}
	get := func(url string) string {
		var r Result
		for i := 0; i < 50; i++ {
			r = d.CLI("exec", client, "wget", "-qO-", url)
			if r.Code == 0 {
				return strings.TrimSpace(r.Stdout)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return r.String()
	}
	for _, name := range []string{"web", "webalias", web} {
		if got := get("http://" + name + "/"); got != "hello-from-web" {
			t.Errorf("client → http://%s/: %q", name, got)
		}
	}
	if r := d.CLI("exec", web, "ping", "-c", "1", "-W", "2", "client"); r.Code != 0 {
		t.Errorf("web → client by name: %v", r)
	}
	if r := d.CLI("exec", client, "cat", "/shared/index.html"); strings.TrimSpace(r.Stdout) != "hello-from-web" {
		t.Errorf("the named volume is not shared: %v", r)
	}
	if out, err := compose("down", "-v"); err != nil {
		t.Fatalf("docker-compose down -v: %v\n%s", err, out)
	}
	downDone = true
	if out := d.MustCLI(t, "ps", "-aq", "--filter", "label=com.docker.compose.project="+project); strings.TrimSpace(out) != "" {
		t.Errorf("containers left: %s", out)
	}
	if out := d.MustCLI(t, "network", "ls", "-q", "--filter", "name="+project); strings.TrimSpace(out) != "" {
		t.Errorf("networks left: %s", out)
	}
	if out := d.MustCLI(t, "volume", "ls", "-q", "--filter", "name="+project); strings.TrimSpace(out) != "" {
		t.Errorf("volumes left: %s", out)
	}
	links, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	if strings.Contains(string(links), "br-"+netID[:12]) {
		t.Errorf("the project network's bridge br-%s is left", netID[:12])
	}
	tables, _ := exec.Command("nft", "list", "tables").CombinedOutput()
	if strings.Contains(string(tables), "sdengine-br-"+netID[:12]) {
		t.Errorf("the project network's table is left")
	}
	routes, _ := exec.Command("ip", "route").CombinedOutput()
	if strings.Contains(string(routes), "br-"+netID[:12]) {
		t.Errorf("a route of the project network is left:\n%s", routes)
	}
	checkNoUserVeths(t, netID, ids...)
	d.Stop(t)
	checkNoNetworkLeft(t, d, bridge, ids...)
}

// checkNoUserVeths fails t if a veth of one of ids on the user-defined
// network netID is still there (libnetwork/bridge names them from both
// IDs).
func checkNoUserVeths(t *testing.T, netID string, ids ...string) {
	t.Helper()
	out, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	for _, id := range ids {
		sum := sha256.Sum256([]byte(netID + " " + id))
		if v := "veth" + hex.EncodeToString(sum[:])[:11]; strings.Contains(string(out), v) {
			t.Errorf("veth %s of %s on network %s left", v, id[:12], netID[:12])
		}
	}
}
