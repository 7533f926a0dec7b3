//go:build integration

package integrationcli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Network tests run a daemon with a bridge of their own (a name and a /24
// of their own, so that tests and Docker side by side never clash), send
// traffic only to loopback, the host's own address and the containers on
// that bridge, and check that nothing of the network is left.

// newBridgeDaemon starts a daemon with its own bridge; ip forwarding is
// left as the host has it (nothing here is routed off the host).
func newBridgeDaemon(t *testing.T) (*Daemon, string) {
	t.Helper()
	n := claimBridgeNumber(t)
	name := fmt.Sprintf("sdit%d", n)
	d := NewDaemon(t, "--bridge", name, "--bip", fmt.Sprintf("10.213.%d.1/24", n), "--ip-forward=false")
	d.Start(t)
	loadBusybox(t, d)
	return d, name
}

// checkNoNetworkLeft fails t if the bridge, a veth of one of ids, the nft
// table or a netns mount is still there.
func checkNoNetworkLeft(t *testing.T, d *Daemon, bridge string, ids ...string) {
	t.Helper()
	out, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	if strings.Contains(string(out), " "+bridge+":") {
		t.Errorf("bridge %s left", bridge)
	}
	for _, id := range ids {
		if strings.Contains(string(out), "veth"+id[:11]) {
			t.Errorf("veth of %s left", id[:12])
		}
	}
	tables, _ := exec.Command("nft", "list", "tables").CombinedOutput()
	if strings.Contains(string(tables), "sdengine-"+bridge+"\n") || strings.HasSuffix(strings.TrimSpace(string(tables)), "sdengine-"+bridge) {
		t.Errorf("nft table sdengine-%s left", bridge)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), d.ExecRoot+"/netns/") {
		t.Errorf("netns mount left")
	}
}

// freeHostPort is a TCP port free on the host's addresses of both
// families now (the kernel's pick, so that two suites side by side do not
// take the same one), for a test to publish.
func freeHostPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	var last error
	for i := 0; i < 50; i++ {
		resp, err := c.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return string(b)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v", url, last)
	return ""
}

func hostAddress(t *testing.T) string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 || i.Flags&net.FlagUp == 0 || strings.HasPrefix(i.Name, "sdit") || strings.HasPrefix(i.Name, "veth") {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	t.Fatal("the host has no IPv4 address of its own")
	return ""
}

func TestBridgePublishedPorts(t *testing.T) {
	d, bridge := newBridgeDaemon(t)
	defer d.Cleanup(t)
	// Host ports of this run: another suite may run beside this one.
	p4, p6 := freeHostPort(t), freeHostPort(t)
	// Published on loopback, and with -P on the host's addresses (the stock CLI: ours has no -p yet).
	r := d.Stock("run", "-d", "--name", "web", "-p", "127.0.0.1:"+p4+":80", "busybox", "httpd", "-f", "-p", "80", "-h", "/etc")
	if r.Code != 0 {
		t.Fatalf("run -p: %v", r)
	}
	web := remember(r.Stdout)
	if got := httpGet(t, "http://127.0.0.1:"+p4+"/hostname"); strings.TrimSpace(got) != web[:12] {
		t.Errorf("through 127.0.0.1:%s: %q", p4, got)
	}
	if got := strings.TrimSpace(d.Stock("port", "web").Stdout); got != "80/tcp -> 127.0.0.1:"+p4 {
		t.Errorf("docker port: %q", got)
	}
	r = d.Stock("run", "-d", "--name", "all", "-P", "--expose", "80", "busybox", "httpd", "-f", "-p", "80", "-h", "/etc")
	if r.Code != 0 {
		t.Fatalf("run -P: %v", r)
	}
	all := remember(r.Stdout)
	port := strings.TrimSpace(d.Stock("inspect", "-f", `{{(index (index .NetworkSettings.Ports "80/tcp") 0).HostPort}}`, "all").Stdout)
	for _, host := range []string{"127.0.0.1", hostAddress(t), "[::1]"} {
		if got := httpGet(t, "http://"+host+":"+port+"/hostname"); strings.TrimSpace(got) != all[:12] {
			t.Errorf("-P through %s:%s: %q", host, port, got)
		}
	}
	// Without a host IP the port is published on both families, as
	// Docker does: the same host port on 0.0.0.0 and on "::".
	if got := strings.TrimSpace(d.Stock("port", "all").Stdout); got != "80/tcp -> 0.0.0.0:"+port+"\n80/tcp -> [::]:"+port {
		t.Errorf("docker port all: %q", got)
	}
	six := remember(d.MustCLI(t, "run", "-d", "--name", "six", "-p", p6+":80", "busybox", "httpd", "-f", "-p", "80", "-h", "/etc"))
	// The same host port again: refused, and nothing of it is left.
	r = d.Stock("run", "-d", "--name", "dup", "-p", "127.0.0.1:"+p4+":80", "busybox", "true")
	if r.Code == 0 || !strings.Contains(r.Stderr, "port is already allocated") {
		t.Errorf("second publish of %s: %v", p4, r)
	}
	dup := remember(strings.TrimSpace(d.Stock("inspect", "-f", "{{.Id}}", "dup").Stdout))
	if len(dup) == 64 {
		out, _ := exec.Command("ip", "-o", "link").CombinedOutput()
		if strings.Contains(string(out), "veth"+dup[:11]) {
			t.Error("veth of the refused container left")
		}
	}
	// Two containers reach each other by address; container: shares a network.
	ip := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", "web"))
	if !strings.HasPrefix(ip, "10.213.") {
		t.Fatalf("address %q", ip)
	}
	if r := d.CLI("run", "--rm", "busybox", "ping", "-c", "1", "-W", "3", ip); r.Code != 0 {
		t.Errorf("ping %s: %v", ip, r)
	}
	if r := d.CLI("run", "--rm", "--network", "container:web", "busybox", "wget", "-qO-", "http://127.0.0.1/hostname"); strings.TrimSpace(r.Stdout) != web[:12] {
		t.Errorf("--network container:web: %v", r)
	}
	// An exec there has the donor's $HOSTNAME, as the first process has.
	joiner := remember(d.MustCLI(t, "run", "-d", "--network", "container:web", "busybox", "top"))
	first := d.MustCLI(t, "exec", joiner, "sh", "-c", "tr '\\0' '\\n' </proc/1/environ | grep ^HOSTNAME=")
	if x := d.MustCLI(t, "exec", joiner, "sh", "-c", "echo HOSTNAME=$HOSTNAME"); first != "HOSTNAME="+web[:12] || x != first {
		t.Errorf("--network container:web: $HOSTNAME %q in the first process, %q in an exec", first, x)
	}
	d.MustCLI(t, "rm", "-f", joiner)
	// rm leaves nothing of the container's network.
	d.MustCLI(t, "rm", "-f", "all")
	out, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	if strings.Contains(string(out), "veth"+all[:11]) {
		t.Error("veth left after rm")
	}
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		if c, err := net.DialTimeout("tcp", host+":"+port, time.Second); err == nil {
			c.Close()
			t.Errorf("port %s:%s still answers after rm", host, port)
		}
	}

	// kill -9 and restart: the running container keeps its address and port.
	d.Kill(t)
	d.Start(t)
	if got := httpGet(t, "http://127.0.0.1:"+p4+"/hostname"); strings.TrimSpace(got) != web[:12] {
		t.Errorf("after kill -9 and restart: %q", got)
	}
	if got := strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", "web")); got != ip {
		t.Errorf("address after restart %q, want %q", got, ip)
	}
	// The IPv6 half is served again by the new daemon.
	if got := httpGet(t, "http://[::1]:"+p6+"/hostname"); strings.TrimSpace(got) != six[:12] {
		t.Errorf("[::1]:%s after kill -9 and restart: %q", p6, got)
	}
	d.Cleanup(t)
	checkNoNetworkLeft(t, d, bridge, web, all, six)
}

// TestBridgeKillRestartCleansUp: containers that ended while the daemon was
// gone leave nothing once it is back; a stopped daemon leaves nothing.
func TestBridgeKillRestartCleansUp(t *testing.T) {
	d, bridge := newBridgeDaemon(t)
	defer d.Cleanup(t)
	id := remember(d.MustCLI(t, "run", "-d", "busybox", "sleep", "2"))
	d.Kill(t)
	time.Sleep(3 * time.Second)
	d.Start(t)
	out, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	if strings.Contains(string(out), "veth"+id[:11]) {
		t.Error("veth of a container that exited while the daemon was down left")
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), d.ExecRoot+"/netns/") {
		t.Error("netns mount left after restart")
	}
	d.Cleanup(t)
	checkNoNetworkLeft(t, d, bridge, id)
}
