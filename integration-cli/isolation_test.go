//go:build integration

package integrationcli

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNetworkIsolation: a container on one user-defined network cannot
// reach a container on another (nor one on the default bridge), while it
// reaches the containers of its own network; once the engine's forward
// chains are emptied by hand the same ping goes through (the host routes
// between bridges, so it is the engine's rules that isolate); a container
// on an --internal network has no way out.
func TestNetworkIsolation(t *testing.T) {
	if b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); strings.TrimSpace(string(b)) != "1" {
		t.Fatal("this test needs the host to route (net.ipv4.ip_forward=1): without it networks are isolated whatever the rules")
	}
	d, bridge := newBridgeDaemon(t)
	defer d.Cleanup(t)
	n := strings.TrimPrefix(bridge, "sdit")
	bra, brb, bri := "sdia"+n, "sdib"+n, "sdii"+n
	d.MustCLI(t, "network", "create", "--subnet", "10.216."+n+".0/24", "-o", "com.docker.network.bridge.name="+bra, "isoa")
	d.MustCLI(t, "network", "create", "--subnet", "10.217."+n+".0/24", "-o", "com.docker.network.bridge.name="+brb, "isob")
	d.MustCLI(t, "network", "create", "--internal", "--subnet", "10.218."+n+".0/24", "-o", "com.docker.network.bridge.name="+bri, "isoi")

	run := func(name string, args ...string) string {
		return strings.TrimSpace(d.MustCLI(t, append([]string{"run", "-d", "--name", name}, append(args, "busybox", "sleep", "300")...)...))
	}
	var ids []string
	ids = append(ids, run("a1", "--network", "isoa"), run("a2", "--network", "isoa"), run("b1", "--network", "isob"),
		run("def"), run("i1", "--network", "isoi"))
	ip := func(name, net string) string {
		return strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{(index .NetworkSettings.Networks \""+net+"\").IPAddress}}", name))
	}
	ping := func(from, to string) bool {
		return d.CLI("exec", from, "ping", "-c", "1", "-W", "2", to).Code == 0
	}
	b1, def := ip("b1", "isob"), ip("def", "bridge")
	if !ping("a1", "a2") || !ping("a1", ip("a2", "isoa")) {
		t.Error("a1 cannot reach a2 on their own network")
	}
	if ping("a1", b1) {
		t.Errorf("a1 (isoa) reaches b1 (isob) at %s", b1)
	}
	if ping("b1", ip("a1", "isoa")) {
		t.Error("b1 (isob) reaches a1 (isoa)")
	}
	if ping("a1", def) {
		t.Errorf("a1 (isoa) reaches a container on the default bridge at %s", def)
	}
	if ping("i1", b1) || ping("i1", "10.217."+n+".1") {
		t.Error("a container on an internal network gets out of it")
	}
	if ping("b1", ip("i1", "isoi")) {
		t.Error("a container reaches into an internal network")
	}
	// The control: without the engine's forward chains, the host routes.
	for _, br := range []string{bra, brb} {
		if out, err := exec.Command("nft", "flush", "chain", "ip", "sdengine-"+br, "forward").CombinedOutput(); err != nil {
			t.Fatalf("flush the forward chain of %s: %v %s", br, err, out)
		}
	}
	if !ping("a1", b1) {
		t.Error("control: with the forward chains emptied, a1 still cannot reach b1: the host does not route between bridges, and the checks above prove nothing")
	}
	// A network created or removed rewrites the others' rules: the
	// isolation is back.
	d.MustCLI(t, "network", "create", "--subnet", "10.219."+n+".0/24", "isoc")
	if ping("a1", b1) {
		t.Error("a1 reaches b1 again once another network was created")
	}
	d.MustCLI(t, "rm", "-f", "a1", "a2", "b1", "def", "i1")
	d.MustCLI(t, "network", "rm", "isoa", "isob", "isoi", "isoc")
	d.Stop(t)
	for _, br := range []string{bra, brb, bri} {
		checkNoNetworkLeft(t, d, br, ids...)
	}
	checkNoNetworkLeft(t, d, bridge, ids...)
}
