package resolver

import (
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// TestAnswersAndForwards: a container's name is answered from the lookup,
// anything else from the upstream (a server of the test's own on
// loopback); an upstream that does not answer is a SERVFAIL.
func TestAnswersAndForwards(t *testing.T) {
	upPC, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &dns.Server{PacketConn: upPC, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.IPv4(10, 9, 8, 7)})
		_ = w.WriteMsg(m)
	})}
	go func() { _ = up.ActivateAndServe() }()
	defer func() { _ = up.Shutdown() }()

	lookup := func(name string) []netip.Addr {
		if name == "web" || name == "alias1" {
			return []netip.Addr{netip.MustParseAddr("172.30.0.2")}
		}
		return nil
	}
	r, err := StartAt("", "127.0.0.1:0", []string{upPC.LocalAddr().String()}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	addr := r.udp.PacketConn.LocalAddr().String()
	ask := func(name string, qt uint16, net string) *dns.Msg {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qt)
		a := addr
		if net == "tcp" {
			a = r.tcp.Listener.Addr().String()
		}
		resp, _, err := (&dns.Client{Net: net}).Exchange(m, a)
		if err != nil {
			t.Fatalf("%s %s: %v", name, net, err)
		}
		return resp
	}
	for _, n := range []string{"web", "WEB.", "alias1"} {
		resp := ask(n, dns.TypeA, "udp")
		if len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != "172.30.0.2" || resp.Answer[0].Header().Ttl != TTL {
			t.Errorf("%s: %v", n, resp)
		}
	}
	if resp := ask("web", dns.TypeAAAA, "udp"); resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 0 {
		t.Errorf("AAAA web: %v", resp)
	}
	// The test's upstream listens on UDP only.
	if resp := ask("example.test", dns.TypeA, "udp"); len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != "10.9.8.7" {
		t.Errorf("forwarded: %v", resp)
	}
	r2, err := StartAt("", "127.0.0.1:0", nil, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	addr = r2.udp.PacketConn.LocalAddr().String()
	if resp := ask("nowhere.test", dns.TypeA, "udp"); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("no upstream: %v", resp)
	}
}

func TestUpstreams(t *testing.T) {
	got := Upstreams("# c\nnameserver 127.0.0.53\nnameserver 10.0.0.1\nsearch x\nnameserver fe80::1%eth0\n")
	want := []string{"127.0.0.53:53", "10.0.0.1:53", "[fe80::1]:53"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%v", got)
		}
	}
}
