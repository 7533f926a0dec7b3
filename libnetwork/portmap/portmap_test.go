package portmap

import (
	"net/netip"
	"testing"

	"github.com/docker/go-connections/nat"

	"github.com/sdengine/engine/libnetwork/types"
	"github.com/sdengine/engine/pkg/errdefs"
)

func TestRequestsFromCLISpecs(t *testing.T) {
	// What the CLI sends for: -p 127.0.0.1:8080:80 -p 9000-9002:53/udp -p 443 with EXPOSE 22 and -P.
	exposed, bindings, err := nat.ParsePortSpecs([]string{"127.0.0.1:8080:80", "9000-9002:53/udp", "443"})
	if err != nil {
		t.Fatal(err)
	}
	exposed["22/tcp"] = struct{}{}
	got, err := Requests(bindings, exposed, true)
	if err != nil {
		t.Fatal(err)
	}
	any4 := netip.IPv4Unspecified()
	want := []Request{
		{Proto: "tcp", HostIP: any4, ContainerPort: 22},
		{Proto: "udp", HostIP: any4, HostPortStart: 9000, HostPortEnd: 9002, ContainerPort: 53},
		{Proto: "tcp", HostIP: netip.MustParseAddr("127.0.0.1"), HostPortStart: 8080, HostPortEnd: 8080, ContainerPort: 80},
		{Proto: "tcp", HostIP: any4, ContainerPort: 443},
	}
	if hostHasIPv6() {
		// Each binding without host IP has its IPv6 half, right after it.
		var both []Request
		for _, r := range want {
			both = append(both, r)
			if r.HostIP == any4 {
				r.HostIP, r.Twin = netip.IPv6Unspecified(), true
				both = append(both, r)
			}
		}
		want = both
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Without -P an exposed port is not published.
	if got, _ := Requests(bindings, exposed, false); len(got) != 3+2*len(v6Half()) {
		t.Errorf("without -P: %+v", got)
	}
}

func TestRequestsRefused(t *testing.T) {
	for name, c := range map[string]struct {
		pm    nat.PortMap
		class func(error) bool
	}{
		"host IP":        {nat.PortMap{"80/tcp": {{HostIP: "300.1.1.1"}}}, errdefs.IsInvalidParameter},
		"host port":      {nat.PortMap{"80/tcp": {{HostPort: "70000"}}}, errdefs.IsInvalidParameter},
		"host port word": {nat.PortMap{"80/tcp": {{HostPort: "http"}}}, errdefs.IsInvalidParameter},
		"container port": {nat.PortMap{"0/tcp": {{}}}, errdefs.IsInvalidParameter},
		"proto":          {nat.PortMap{"80/icmp": {{}}}, errdefs.IsInvalidParameter},
		"sctp":           {nat.PortMap{"80/sctp": {{}}}, func(err error) bool { return errdefs.ClassOf(err) == errdefs.ClassNotImplemented }},
	} {
		if _, err := Requests(c.pm, nil, false); err == nil || !c.class(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// "::" beside the binding without host IP (what some clients send,
	// as inspect shows the two halves) is that binding's IPv6 half, once.
	got, err := Requests(nat.PortMap{"80/tcp": {{HostIP: "::", HostPort: "80"}, {HostPort: "80"}}}, nil, false)
	if err != nil || len(got) != 1+len(v6Half()) {
		t.Errorf(":: binding: %v %v", got, err)
	}
}

// v6Half is the IPv6 half Requests adds to a binding without host IP on
// this host (none where the kernel has no IPv6).
func v6Half() []Request {
	if hostHasIPv6() {
		return []Request{{}}
	}
	return nil
}

func TestReserveHoldsAndConflicts(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	bs, h, err := Reserve([]Request{{Proto: "tcp", HostIP: lo, ContainerPort: 80}, {Proto: "udp", HostIP: lo, ContainerPort: 53}})
	if err != nil {
		t.Fatal(err)
	}
	if bs[0].HostPort == 0 || bs[1].HostPort == 0 {
		t.Fatalf("no port picked: %+v", bs)
	}
	// The same port again is a conflict, and nothing of the failed
	// reservation is kept (the free port before it is released).
	_, _, err = Reserve([]Request{
		{Proto: "udp", HostIP: lo, ContainerPort: 1},
		{Proto: "tcp", HostIP: lo, HostPortStart: bs[0].HostPort, HostPortEnd: bs[0].HostPort, ContainerPort: 80},
	})
	if !errdefs.IsConflict(err) {
		t.Fatalf("second reservation of %d: %v", bs[0].HostPort, err)
	}
	// A range moves on to a free port.
	bs2, h2, err := Reserve([]Request{{Proto: "tcp", HostIP: lo, HostPortStart: bs[0].HostPort, HostPortEnd: bs[0].HostPort + 1, ContainerPort: 80}})
	if err == nil {
		if bs2[0].HostPort == bs[0].HostPort {
			t.Fatalf("range gave the taken port")
		}
		h2.Close()
	}
	h.Close()
	h3, err := Rebind(bs)
	if err != nil {
		t.Fatalf("rebind after release: %v", err)
	}
	h3.Close()
}

func TestPortMap(t *testing.T) {
	pm := PortMap([]types.PortBinding{{Proto: "tcp", HostIP: "0.0.0.0", HostPort: 32768, ContainerPort: 80}}, nat.PortSet{"80/tcp": {}, "22/tcp": {}})
	if b := pm["80/tcp"]; len(b) != 1 || b[0].HostPort != "32768" || b[0].HostIP != "0.0.0.0" {
		t.Errorf("80/tcp: %+v", b)
	}
	if b, ok := pm["22/tcp"]; !ok || b != nil {
		t.Errorf("22/tcp: %+v %v", b, ok)
	}
}
