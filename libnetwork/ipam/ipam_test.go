package ipam

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

func open(t *testing.T, path, subnet, pool string) *Allocator {
	t.Helper()
	s, p := netip.MustParsePrefix(subnet), netip.MustParsePrefix(pool)
	a, err := Open(path, s, p, s.Masked().Addr().Next())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAllocateSkipsGatewayAndPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases.json")
	a := open(t, path, "10.9.0.1/24", "10.9.0.0/24")
	ip1, err := a.Allocate("c1", netip.Addr{})
	if err != nil || ip1.String() != "10.9.0.2" {
		t.Fatalf("first lease %v %v, want 10.9.0.2", ip1, err)
	}
	ip2, _ := a.Allocate("c2", netip.Addr{})
	if ip2.String() != "10.9.0.3" {
		t.Fatalf("second lease %v", ip2)
	}
	// Asked again, an owner keeps its address.
	if again, _ := a.Allocate("c1", netip.Addr{}); again != ip1 {
		t.Fatalf("c1 again: %v", again)
	}
	// A second allocator on the same file (a restarted daemon) sees them.
	b := open(t, path, "10.9.0.1/24", "10.9.0.0/24")
	if got := b.Leases(); got["c1"] != ip1 || got["c2"] != ip2 {
		t.Fatalf("reloaded leases %v", got)
	}
	if err := b.Release("c1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Release("c1"); err != nil {
		t.Fatalf("second release: %v", err)
	}
	c := open(t, path, "10.9.0.1/24", "10.9.0.0/24")
	if got := c.Owners(); len(got) != 1 || got[0] != "c2" {
		t.Fatalf("owners after release %v", got)
	}
	// Round robin: a released address is not the next one handed out.
	ip3, _ := c.Allocate("c3", netip.Addr{})
	if ip3 == ip1 {
		t.Fatalf("released address reused at once: %v", ip3)
	}
}

func TestExhaustionAndWrap(t *testing.T) {
	a := open(t, filepath.Join(t.TempDir(), "l"), "10.9.0.1/29", "10.9.0.0/29")
	// .0 network, .1 gateway, .7 broadcast: .2-.6 are five addresses.
	for i := 0; i < 5; i++ {
		if _, err := a.Allocate(string(rune('a'+i)), netip.Addr{}); err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
	}
	if _, err := a.Allocate("f", netip.Addr{}); err == nil || errdefs.ClassOf(err) != errdefs.ClassUnavailable {
		t.Fatalf("exhausted pool: %v", err)
	}
	if err := a.Release("b"); err != nil {
		t.Fatal(err)
	}
	ip, err := a.Allocate("f", netip.Addr{})
	if err != nil || ip.String() != "10.9.0.3" {
		t.Fatalf("after wrap: %v %v", ip, err)
	}
}

func TestFixedCIDRAndRequested(t *testing.T) {
	a := open(t, filepath.Join(t.TempDir(), "l"), "10.9.0.1/16", "10.9.4.0/24")
	ip, err := a.Allocate("a", netip.Addr{})
	if err != nil || ip.String() != "10.9.4.0" {
		t.Fatalf("fixed-cidr first: %v %v", ip, err)
	}
	if _, err := a.Allocate("b", netip.MustParseAddr("10.9.5.1")); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("outside the pool: %v", err)
	}
	if _, err := a.Allocate("b", ip); !errdefs.IsConflict(err) {
		t.Fatalf("taken: %v", err)
	}
	if got, err := a.Allocate("b", netip.MustParseAddr("10.9.4.9")); err != nil || got.String() != "10.9.4.9" {
		t.Fatalf("requested: %v %v", got, err)
	}
}

func TestOpenRefusesBadPools(t *testing.T) {
	s := netip.MustParsePrefix("10.9.0.0/24")
	if _, err := Open(filepath.Join(t.TempDir(), "l"), s, netip.MustParsePrefix("10.8.0.0/24"), netip.Addr{}); err == nil {
		t.Fatal("pool outside the subnet accepted")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "l"), netip.MustParsePrefix("10.9.0.0/31"), netip.MustParsePrefix("10.9.0.0/31"), netip.Addr{}); err == nil {
		t.Fatal("a /31 accepted")
	}
}

func TestLeasesOfAnotherSubnetDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l")
	a := open(t, path, "10.9.0.1/24", "10.9.0.0/24")
	if _, err := a.Allocate("a", netip.Addr{}); err != nil {
		t.Fatal(err)
	}
	b := open(t, path, "10.10.0.1/24", "10.10.0.0/24")
	if len(b.Leases()) != 0 {
		t.Fatalf("leases of another subnet kept: %v", b.Leases())
	}
}

func TestAllocateIPv6(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases6.json")
	a := open(t, path, "fd54:7a1b:8269::/64", "fd54:7a1b:8269::/64")
	ip1, err := a.Allocate("c1", netip.Addr{})
	if err != nil || ip1.String() != "fd54:7a1b:8269::2" {
		t.Fatalf("first lease %v %v, want fd54:7a1b:8269::2 (::1 is the gateway)", ip1, err)
	}
	want := netip.MustParseAddr("fd54:7a1b:8269::ffff:ffff:ffff:ffff")
	if ip, err := a.Allocate("c2", want); err != nil || ip != want {
		t.Fatalf("the last address of an IPv6 subnet (no broadcast): %v %v", ip, err)
	}
	if _, err := a.Allocate("c3", netip.MustParseAddr("fd54:7a1b:8269::")); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("the subnet-router anycast address: %v", err)
	}
	if _, err := a.Allocate("c4", netip.MustParseAddr("fd00::5")); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("outside the subnet: %v", err)
	}
	if _, err := Open(path, netip.MustParsePrefix("fd00::/64"), netip.MustParsePrefix("10.0.0.0/24"), netip.Addr{}); err == nil {
		t.Fatal("a pool of another family than its subnet")
	}
}
