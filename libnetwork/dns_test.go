package libnetwork

import (
	"net/netip"
	"slices"
	"testing"
)

// TestDNSRegistryScopes: a name answers only to containers sharing a
// network with its owner, each address once, and goes with a removal.
func TestDNSRegistryScopes(t *testing.T) {
	r := dnsRegistry{byNet: map[string]map[string]dnsEntry{}}
	a, b := netip.MustParseAddr("10.0.1.2"), netip.MustParseAddr("10.0.2.2")
	r.add("n1", "web", dnsEntry{names: []string{"web", "alias"}, ip: a})
	r.add("n1", "client", dnsEntry{names: []string{"client"}, ip: netip.MustParseAddr("10.0.1.3")})
	r.add("n2", "other", dnsEntry{names: []string{"other", "alias"}, ip: b})
	if got := r.lookup("client", "web"); !slices.Equal(got, []netip.Addr{a}) {
		t.Errorf("web from client: %v", got)
	}
	if got := r.lookup("client", "alias"); !slices.Equal(got, []netip.Addr{a}) {
		t.Errorf("alias from client (n1 only): %v", got)
	}
	if got := r.lookup("client", "other"); len(got) != 0 {
		t.Errorf("other is on n2 only: %v", got)
	}
	if got := r.lookup("stranger", "web"); len(got) != 0 {
		t.Errorf("a container on no network: %v", got)
	}
	r.remove("n1", "web")
	if got := r.lookup("client", "web"); len(got) != 0 {
		t.Errorf("after removal: %v", got)
	}
}

// TestDNSRegistryLinks: a legacy link on a user-defined network is a name
// for the linking container alone, of the linked container's address on
// that network.
func TestDNSRegistryLinks(t *testing.T) {
	r := dnsRegistry{byNet: map[string]map[string]dnsEntry{}}
	db := netip.MustParseAddr("10.0.1.2")
	r.add("n1", "db", dnsEntry{names: []string{"db1"}, ip: db})
	r.add("n1", "app", dnsEntry{names: []string{"app"}, ip: netip.MustParseAddr("10.0.1.3"), links: map[string]string{"mysql": "db1", "ghost": "nosuch"}})
	r.add("n1", "other", dnsEntry{names: []string{"other"}, ip: netip.MustParseAddr("10.0.1.4")})
	if got := r.lookup("app", "mysql"); !slices.Equal(got, []netip.Addr{db}) {
		t.Errorf("mysql from app: %v", got)
	}
	if got := r.lookup("other", "mysql"); len(got) != 0 {
		t.Errorf("mysql from a container without the link: %v", got)
	}
	if got := r.lookup("app", "ghost"); len(got) != 0 {
		t.Errorf("a link to a missing container: %v", got)
	}
}
