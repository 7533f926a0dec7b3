//go:build integration

package integrationcli

import (
	"fmt"
	"strings"
	"testing"
)

// TestLegacyLinks: --link on the default bridge gives the linking
// container the linked one's variables and an /etc/hosts line, makes
// /PARENT/ALIAS a name of the linked container (ps, inspect), survives a
// rename and a kill -9 and restart of the daemon, and goes with rm
// --link; it is refused with the host's network and at a start whose
// linked container does not run; on a user-defined network the alias is
// a DNS name for the linking container only.
func TestLegacyLinks(t *testing.T) {
	d, bridge := newBridgeDaemon(t)
	defer d.Cleanup(t)
	db := remember(d.MustCLI(t, "run", "-d", "--name", "db", "--hostname", "dbhost", "-e", "PASSWORD=s3cret", "--expose", "5432", "busybox", "sleep", "300"))
	app := remember(d.MustCLI(t, "run", "-d", "--name", "app", "--link", "db:mysql", "busybox", "sleep", "300"))
	dbIP := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", "db"))

	check := func(when string) {
		t.Helper()
		env := d.MustCLI(t, "exec", "app", "env")
		for _, want := range []string{
			"MYSQL_PORT=tcp://" + dbIP + ":5432", "MYSQL_PORT_5432_TCP_ADDR=" + dbIP, "MYSQL_PORT_5432_TCP_PORT=5432",
			"MYSQL_NAME=/app/mysql", "MYSQL_ENV_PASSWORD=s3cret",
		} {
			if !strings.Contains(env, want+"\n") {
				t.Errorf("%s: app's environment lacks %s:\n%s", when, want, env)
			}
		}
		if hosts := d.MustCLI(t, "exec", "app", "cat", "/etc/hosts"); !strings.Contains(hosts+"\n", dbIP+"\tmysql dbhost db\n") {
			t.Errorf("%s: app's /etc/hosts:\n%s", when, hosts)
		}
		if r := d.CLI("exec", "app", "ping", "-c", "1", "-W", "2", "mysql"); r.Code != 0 {
			t.Errorf("%s: app → mysql: %v", when, r)
		}
		if got := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{.Id}}", "app/mysql")); got != db {
			t.Errorf("%s: inspect app/mysql is %s, want db", when, got)
		}
	}
	check("after run")
	if got := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{json .HostConfig.Links}}", "app")); got != `["/db:/app/mysql"]` {
		t.Errorf("HostConfig.Links %s", got)
	}
	if got := d.MustCLI(t, "ps", "--no-trunc", "--filter", "id="+db, "--format", "{{.Names}}"); !strings.Contains(got, "app/mysql") {
		t.Errorf("ps names of db: %q", got)
	}
	d.MustCLI(t, "rename", "db", "db2")
	if got := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{json .HostConfig.Links}}", "app")); got != `["/db2:/app/mysql"]` {
		t.Errorf("HostConfig.Links after renaming db: %s", got)
	}
	d.MustCLI(t, "rename", "db2", "db")

	d.Kill(t)
	d.Start(t)
	check("after kill -9 and restart")
	d.MustCLI(t, "restart", "-t", "0", "app")
	check("after docker restart")

	if r := d.CLI("run", "--rm", "--network", "host", "--link", "db", "busybox", "true"); r.Code == 0 || !strings.Contains(r.Stderr, "host type networking can't be used with links") {
		t.Errorf("--link with the host's network: %v", r)
	}
	d.MustCLI(t, "create", "--name", "stopped", "busybox", "sleep", "300")
	if r := d.CLI("run", "-d", "--name", "app2", "--link", "stopped:s", "busybox", "sleep", "300"); r.Code == 0 || !strings.Contains(r.Stderr, "Cannot link to a non running container: /stopped AS /app2/s") {
		t.Errorf("a link to a container that does not run: %v", r)
	}
	d.MustCLI(t, "rm", "--link", "/app/mysql")
	if got := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{json .HostConfig.Links}}", "app")); got != "null" {
		t.Errorf("HostConfig.Links after rm --link: %s", got)
	}
	if r := d.CLI("inspect", "app/mysql"); r.Code == 0 {
		t.Error("app/mysql still names db after rm --link")
	}

	// On a user-defined network: a DNS name for the linking container.
	n := strings.TrimPrefix(bridge, "sdit")
	d.MustCLI(t, "network", "create", "--subnet", fmt.Sprintf("10.222.%s.0/24", n), "-o", "com.docker.network.bridge.name=sdlk"+n, "lknet")
	udb := remember(d.MustCLI(t, "run", "-d", "--name", "udb", "--network", "lknet", "busybox", "sleep", "300"))
	uapp := remember(d.MustCLI(t, "run", "-d", "--name", "uapp", "--network", "lknet", "--link", "udb:sql", "--link", "nosuch:ghost", "busybox", "sleep", "300"))
	uother := remember(d.MustCLI(t, "run", "-d", "--name", "uother", "--network", "lknet", "busybox", "sleep", "300"))
	if got := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{json .HostConfig.Links}} {{json .NetworkSettings.Networks.lknet.Links}}", "uapp")); got != `null ["udb:sql","nosuch:ghost"]` {
		t.Errorf("links on a user-defined network in inspect: %s", got)
	}
	if r := d.CLI("exec", "uapp", "ping", "-c", "1", "-W", "2", "sql"); r.Code != 0 {
		t.Errorf("uapp → sql on a user-defined network: %v", r)
	}
	if r := d.CLI("exec", "uother", "nslookup", "sql", "127.0.0.11"); r.Code == 0 && strings.Contains(r.Stdout, "10.222.") {
		t.Errorf("sql answers to a container without the link: %v", r)
	}
	d.MustCLI(t, "rm", "-f", "app", "db", "stopped", "app2", "udb", "uapp", "uother")
	d.MustCLI(t, "network", "rm", "lknet")
	d.Stop(t)
	checkNoNetworkLeft(t, d, bridge, db, app)
	checkNoNetworkLeft(t, d, "sdlk"+n, udb, uapp, uother)
}
