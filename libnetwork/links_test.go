package libnetwork

import (
	"reflect"
	"testing"

	"github.com/docker/go-connections/nat"
)

func TestParseLink(t *testing.T) {
	for _, tc := range []struct{ in, name, alias string }{
		{"db", "db", "db"},
		{"db:sql", "db", "sql"},
		{"db:/mysql", "db", "mysql"},
		{"/db:/app/sql", "db", "sql"},
	} {
		name, alias, err := ParseLink(tc.in)
		if err != nil || name != tc.name || alias != tc.alias {
			t.Errorf("%q: got %q %q %v; want %q %q", tc.in, name, alias, err, tc.name, tc.alias)
		}
	}
	for _, bad := range []string{"", "a:b:c", ":x"} {
		if _, _, err := ParseLink(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestLinkEnv(t *testing.T) {
	st := LinkedContainer{Name: "/db1",
		Env:   []string{"PATH=/bin", "HOME=/root", "PASSWORD=x=y"},
		Ports: []nat.Port{"6379/tcp", "53/udp", "53/tcp"}}
	got := linkEnv("my-db", "/app/my-db", "172.17.0.2", st)
	want := []string{
		"MY_DB_PORT=tcp://172.17.0.2:53",
		"MY_DB_PORT_53_TCP=tcp://172.17.0.2:53", "MY_DB_PORT_53_TCP_ADDR=172.17.0.2", "MY_DB_PORT_53_TCP_PORT=53", "MY_DB_PORT_53_TCP_PROTO=tcp",
		"MY_DB_PORT_53_UDP=udp://172.17.0.2:53", "MY_DB_PORT_53_UDP_ADDR=172.17.0.2", "MY_DB_PORT_53_UDP_PORT=53", "MY_DB_PORT_53_UDP_PROTO=udp",
		"MY_DB_PORT_6379_TCP=tcp://172.17.0.2:6379", "MY_DB_PORT_6379_TCP_ADDR=172.17.0.2", "MY_DB_PORT_6379_TCP_PORT=6379", "MY_DB_PORT_6379_TCP_PROTO=tcp",
		"MY_DB_NAME=/app/my-db",
		"MY_DB_ENV_PASSWORD=x=y",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestGatewayEndpoints(t *testing.T) {
	ep := func(net string, prio int, v6, internal bool) *Endpoint {
		e := &Endpoint{Network: net, Gateway: "10.0.0.1", GwPriority: prio, Internal: internal}
		if v6 {
			e.IPv6Gateway = "fd00::1"
		}
		return e
	}
	c := Attachment{Network: ep("testnet1", 0, true, false), Networks: map[string]*Endpoint{
		"testnet3": ep("testnet3", 10, false, false),
		"testnet4": ep("testnet4", 10, true, false),
		"testnet5": ep("testnet5", -100, true, false),
		"internal": ep("internal", 1000, true, true),
	}}
	v4, v6 := gatewayEndpoints(c)
	if v4 == nil || v4.Network != "testnet3" || v6 == nil || v6.Network != "testnet4" {
		t.Errorf("got %v %v; want testnet3 (a tie sorts by name) and testnet4 (the best with IPv6)", v4, v6)
	}
	c.Networks["testnet2"] = ep("testnet2", 100, true, false)
	if v4, v6 = gatewayEndpoints(c); v4.Network != "testnet2" || v6.Network != "testnet2" {
		t.Errorf("got %s %s; want testnet2", v4.Network, v6.Network)
	}
	c = Attachment{Network: ep("internal", 0, true, true)}
	if v4, v6 = gatewayEndpoints(c); v4 != nil || v6 != nil {
		t.Errorf("an internal network gives a default route: %v %v", v4, v6)
	}
}
