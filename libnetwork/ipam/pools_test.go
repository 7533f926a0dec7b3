package ipam

import (
	"net/netip"
	"testing"
)

func TestNextSubnet(t *testing.T) {
	pp := netip.MustParsePrefix
	for _, tc := range []struct {
		used []netip.Prefix
		want string
	}{
		{nil, "172.17.0.0/16"},
		{[]netip.Prefix{pp("172.17.0.0/16")}, "172.18.0.0/16"},
		{[]netip.Prefix{pp("172.17.0.0/16"), pp("172.18.5.0/24"), pp("172.19.0.1/32")}, "172.20.0.0/16"},
		{[]netip.Prefix{pp("172.16.0.0/12")}, "192.168.0.0/20"},
		{[]netip.Prefix{pp("172.16.0.0/12"), pp("192.168.1.0/24")}, "192.168.16.0/20"},
	} {
		got, err := NextSubnet(DefaultPools, tc.used)
		if err != nil || got.String() != tc.want {
			t.Errorf("NextSubnet(%v) = %v, %v; want %s", tc.used, got, err, tc.want)
		}
	}
	if _, err := NextSubnet(DefaultPools, []netip.Prefix{pp("0.0.0.0/0")}); err == nil {
		t.Error("NextSubnet with everything used: no error")
	}
	if g := FirstHost(pp("10.1.2.0/24")); g.String() != "10.1.2.1" {
		t.Errorf("FirstHost = %s", g)
	}
}
