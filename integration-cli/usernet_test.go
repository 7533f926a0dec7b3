//go:build integration

package integrationcli

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// startTestDNS serves on a loopback address of the test's own, port 53,
// UDP and TCP: upstream.test. answers 10.1.2.3. It is the upstream of
// the daemon's embedded DNS servers (through --host-resolv-conf); nothing
// is ever asked of the host's resolvers.
func startTestDNS(t *testing.T) string {
	t.Helper()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		if strings.EqualFold(q.Name, "upstream.test.") && q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.IPv4(10, 1, 2, 3)})
		} else if !strings.EqualFold(q.Name, "upstream.test.") {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	for try := 0; ; try++ {
		addr := fmt.Sprintf("127.%d.%d.%d", 100+rand.IntN(100), rand.IntN(250), 1+rand.IntN(250))
		pc, err := net.ListenPacket("udp4", addr+":53")
		if err != nil {
			if try > 10 {
				t.Fatal(err)
			}
			continue
		}
		l, err := net.Listen("tcp4", addr+":53")
		if err != nil {
			pc.Close()
			continue
		}
		u, tc := &dns.Server{PacketConn: pc, Handler: h}, &dns.Server{Listener: l, Handler: h}
		go func() { _ = u.ActivateAndServe() }()
		go func() { _ = tc.ActivateAndServe() }()
		t.Cleanup(func() { _ = u.Shutdown(); _ = tc.Shutdown() })
		return addr
	}
}

// TestUserNetworks: two containers on a user-defined network reach each
// other by name and alias through the embedded DNS, which forwards other
// names to the test's own server; a network in use cannot be removed;
// connect and disconnect; a container on two networks reaches both; a
// kill -9 and restart keeps it all; nothing is left at the end.
func TestUserNetworks(t *testing.T) {
	up := startTestDNS(t)
	rc := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(rc, []byte("nameserver "+up+"\noptions ndots:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := claimBridgeNumber(t)
	bridge := fmt.Sprintf("sdit%d", n)
	d := NewDaemon(t, "--bridge", bridge, "--bip", fmt.Sprintf("10.213.%d.1/24", n), "--ip-forward=false", "--host-resolv-conf", rc)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	net1, net2 := fmt.Sprintf("10.214.%d.0/24", n), fmt.Sprintf("10.215.%d.0/24", n)
	id1 := strings.TrimSpace(d.MustCLI(t, "network", "create", "--subnet", net1, "--label", "test=1", "un1"))
	id2 := strings.TrimSpace(d.MustCLI(t, "network", "create", "--subnet", net2, "-o", "com.docker.network.bridge.name=sdu"+fmt.Sprint(n), "un2"))
	if r := d.CLI("network", "create", "--subnet", net1, "overlap"); r.Code == 0 || !strings.Contains(r.Stderr, "Pool overlaps") {
		t.Errorf("overlapping subnet: %v", r)
	}
	web := remember(d.MustCLI(t, "run", "-d", "--name", "web", "--network", "un1", "--network-alias", "webalias", "busybox", "httpd", "-f", "-p", "80", "-h", "/etc"))
	two := remember(mustStock(t, d, "run", "-d", "--name", "two", "--network", "un2", "--ip", strings.TrimSuffix(net2, "0/24")+"77", "busybox", "sleep", "300"))
	if ip := strings.TrimSpace(mustStock(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.un2.IPAddress}}", "two")); ip != strings.TrimSuffix(net2, "0/24")+"77" {
		t.Errorf("--ip: got %q", ip)
	}
	for _, name := range []string{"web", "webalias", web[:12]} {
		if r := d.Stock("run", "--rm", "--network", "un1", "busybox", "ping", "-c", "1", "-W", "3", name); r.Code != 0 {
			t.Errorf("ping %s: %v", name, r)
		}
	}
	if r := d.Stock("run", "--rm", "--network", "un1", "busybox", "wget", "-qO-", "http://webalias/hostname"); strings.TrimSpace(r.Stdout) != web[:12] {
		t.Errorf("wget webalias: %v", r)
	}
	r := d.Stock("run", "--rm", "--network", "un1", "busybox", "nslookup", "upstream.test")
	if !strings.Contains(r.Stdout, "10.1.2.3") {
		t.Errorf("forwarded to the test's DNS server: %v", r)
	}
	if r := d.Stock("run", "--rm", "--network", "un1", "busybox", "cat", "/etc/resolv.conf"); !strings.Contains(r.Stdout, "nameserver 127.0.0.11") || !strings.Contains(r.Stdout, "ndots:0") {
		t.Errorf("resolv.conf: %v", r)
	}
	// Not on un2: two is not a name there.
	if r := d.Stock("exec", "web", "ping", "-c", "1", "-W", "2", "two"); r.Code == 0 {
		t.Errorf("two resolved from un1 only: %v", r)
	}
	if r := d.CLI("network", "rm", "un1"); r.Code == 0 || !strings.Contains(r.Stderr, "has active endpoints") {
		t.Errorf("rm of a network in use: %v", r)
	}
	// connect: web on both networks reaches two by name.
	d.MustCLI(t, "network", "connect", "--alias", "web2", "un2", "web")
	if r := d.Stock("exec", "web", "ping", "-c", "1", "-W", "3", "two"); r.Code != 0 {
		t.Errorf("ping two after connect: %v", r)
	}
	if r := d.Stock("exec", "two", "ping", "-c", "1", "-W", "3", "web2"); r.Code != 0 {
		t.Errorf("ping web2 from two: %v", r)
	}
	insp := d.MustCLI(t, "network", "inspect", "-f", "{{len .Containers}}", "un2")
	if strings.TrimSpace(insp) != "2" {
		t.Errorf("un2 containers: %q", insp)
	}

	// kill -9 and restart: the names still answer.
	d.Kill(t)
	d.Start(t)
	if r := d.Stock("run", "--rm", "--network", "un1", "busybox", "ping", "-c", "1", "-W", "3", "web"); r.Code != 0 {
		t.Errorf("ping web after restart: %v", r)
	}
	if r := d.Stock("exec", "two", "ping", "-c", "1", "-W", "3", "web"); r.Code != 0 {
		t.Errorf("ping web from two after restart: %v", r)
	}
	d.MustCLI(t, "network", "disconnect", "un2", "web")
	time.Sleep(100 * time.Millisecond)
	if r := d.Stock("exec", "two", "ping", "-c", "1", "-W", "2", "web"); r.Code == 0 {
		t.Errorf("web still answers on un2 after disconnect: %v", r)
	}
	if ls := d.MustCLI(t, "network", "ls", "--filter", "label=test=1", "--format", "{{.Name}}"); strings.TrimSpace(ls) != "un1" {
		t.Errorf("ls --filter label: %q", ls)
	}
	// Our CLI's run flags take effect.
	r = d.CLI("run", "--rm", "--network", "un1", "--add-host", "gw:host-gateway", "--add-host", "other:10.9.9.9",
		"--dns-search", "example.test", "--dns-option", "ndots:3", "--mac-address", "02:42:ac:11:00:99", "--hostname", "h1", "--domainname", "dom.test",
		"busybox", "sh", "-c", "cat /etc/hosts /etc/resolv.conf; ip link show eth0")
	for _, want := range []string{"10.213.", "\tgw\n", "10.9.9.9\tother", "h1.dom.test h1", "search example.test", "options ndots:3", "nameserver 127.0.0.11", "02:42:ac:11:00:99"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("run flags: %q not in %v", want, r)
		}
	}
	mustStock(t, d, "rm", "-f", "web", "two")
	if out := d.MustCLI(t, "network", "prune", "-f"); !strings.Contains(out, "un1") || !strings.Contains(out, "un2") {
		t.Errorf("prune: %q", out)
	}
	d.Cleanup(t)
	checkNoNetworkLeft(t, d, bridge, web, two)
	for _, br := range []string{"br-" + id1[:12], "sdu" + fmt.Sprint(n), "br-" + id2[:12]} {
		checkNoNetworkLeft(t, d, br)
	}
	if out, _ := exec.Command("ip", "-o", "link").CombinedOutput(); strings.Contains(string(out), "br-"+id1[:12]) {
		t.Errorf("bridge of un1 left")
	}
}
