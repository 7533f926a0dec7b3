//go:build integration

package integrationcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leaseOwners are the containers holding an address in a bridge's lease
// file (none if the file is gone).
func leaseOwners(t *testing.T, d *Daemon, bridge string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Root, "network", bridge+"-leases.json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Leases map[string]string }
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s leases: %v", bridge, err)
	}
	var out []string
	for owner := range f.Leases {
		out = append(out, owner)
	}
	return out
}

// TestNetworkLeftoversAfterKill: a daemon killed with -9 while bridged
// containers run (on the default bridge, with a published port, and on a
// user-defined network) and one exits meanwhile: once restarted, the
// running ones keep their address, port and veth, while the exited one
// has no veth, lease, DNAT rule or namespace left; after rm, network rm
// and a stop, no bridge, veth, route, nft table, lease or namespace is
// left.
func TestNetworkLeftoversAfterKill(t *testing.T) {
	d, bridge := newBridgeDaemon(t)
	defer d.Cleanup(t)
	n := strings.TrimPrefix(bridge, "sdit")
	ubr := "sdlu" + n
	netID := strings.TrimSpace(d.MustCLI(t, "network", "create", "--subnet", "10.220."+n+".0/24", "-o", "com.docker.network.bridge.name="+ubr, "lonet"))
	pKeep, pGone := freeHostPort(t), freeHostPort(t)
	keep := remember(d.MustCLI(t, "run", "-d", "--name", "keep", "-p", "127.0.0.1:"+pKeep+":80", "busybox", "httpd", "-f", "-p", "80"))
	onNet := remember(d.MustCLI(t, "run", "-d", "--name", "onnet", "--network", "lonet", "busybox", "sleep", "300"))
	gone := remember(d.MustCLI(t, "run", "-d", "--name", "gone", "-p", "127.0.0.1:"+pGone+":80", "busybox", "sh", "-c", "sleep 2"))
	goneNet := remember(d.MustCLI(t, "run", "-d", "--name", "gonenet", "--network", "lonet", "busybox", "sh", "-c", "sleep 2"))
	d.Kill(t)
	time.Sleep(3 * time.Second)
	d.Start(t)

	links, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	if !strings.Contains(string(links), "veth"+keep[:11]) {
		t.Error("the veth of a container that kept running is gone")
	}
	if strings.Contains(string(links), "veth"+gone[:11]) {
		t.Error("the veth of a container that exited while the daemon was down is left")
	}
	checkNoUserVeths(t, netID, goneNet)
	for br, want := range map[string]string{bridge: keep, ubr: onNet} {
		owners := leaseOwners(t, d, br)
		if len(owners) != 1 || owners[0] != want {
			t.Errorf("leases on %s after restart: %v, want only %s", br, owners, want[:12])
		}
	}
	table, _ := exec.Command("nft", "list", "table", "ip", "sdengine-"+bridge).CombinedOutput()
	if !strings.Contains(string(table), "dport "+pKeep+" ") || strings.Contains(string(table), "dport "+pGone+" ") {
		t.Errorf("published ports in the table after restart (want %s only):\n%s", pKeep, table)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, id := range []string{gone, goneNet} {
		if strings.Contains(string(mi), d.ExecRoot+"/netns/"+id[:12]) {
			t.Errorf("the namespace of %s is left", id[:12])
		}
	}
	if got := httpGetOK(t, "http://127.0.0.1:"+pKeep+"/"); !got {
		t.Error("the published port of the running container does not answer after the restart")
	}

	d.MustCLI(t, "rm", "-f", "keep", "onnet", "gone", "gonenet")
	d.MustCLI(t, "network", "rm", "lonet")
	d.Stop(t)
	for _, br := range []string{bridge, ubr} {
		if owners := leaseOwners(t, d, br); len(owners) > 0 {
			t.Errorf("leases left on %s: %v", br, owners)
		}
		routes, _ := exec.Command("ip", "route").CombinedOutput()
		if strings.Contains(string(routes), "dev "+br+" ") {
			t.Errorf("a route via %s is left:\n%s", br, routes)
		}
		checkNoNetworkLeft(t, d, br, keep, gone)
	}
	checkNoUserVeths(t, netID, onNet, goneNet)
}

// httpGetOK reports whether url answers HTTP at all (any status).
func httpGetOK(t *testing.T, url string) bool {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	for i := 0; i < 50; i++ {
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// A SIGTERM that comes while the daemon is still setting up (the bridge
// made, its rules and the API perhaps not yet) ends it as cleanly as one
// that comes later: the bridge and its table go with it.
func TestNetworkLeftoversAfterEarlyStop(t *testing.T) {
	n := claimBridgeNumber(t)
	bridge := fmt.Sprintf("sdit%d", n)
	d := NewDaemon(t, "--bridge", bridge, "--bip", fmt.Sprintf("10.213.%d.1/24", n), "--ip-forward=false")
	defer d.Cleanup(t)
	for _, after := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond} {
		cmd := exec.Command(dockerd, d.Args...)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// The moment that matters: the bridge exists.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
				break
			}
			time.Sleep(500 * time.Microsecond)
		}
		time.Sleep(after)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("SIGTERM %v after the bridge appeared: %v\n%s", after, err, log.String())
			}
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("SIGTERM %v after the bridge appeared: the daemon did not end\n%s", after, log.String())
		}
		checkNoNetworkLeft(t, d, bridge)
	}
}
