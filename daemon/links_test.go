package daemon

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
		name, alias, err := parseLink(tc.in)
		if err != nil || name != tc.name || alias != tc.alias {
			t.Errorf("%q: got %q %q %v; want %q %q", tc.in, name, alias, err, tc.name, tc.alias)
		}
	}
	for _, bad := range []string{"", "a:b:c", ":x"} {
		if _, _, err := parseLink(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestLinkEnv(t *testing.T) {
	st := linkedState{name: "/db1", ip: "172.17.0.2",
		env:   []string{"PATH=/bin", "HOME=/root", "PASSWORD=x=y"},
		ports: []nat.Port{"6379/tcp", "53/udp", "53/tcp"}}
	got := linkEnv("my-db", "/app/my-db", st)
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
