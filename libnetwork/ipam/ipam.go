// Package ipam hands out the IPv4 addresses of one subnet to owners (the
// containers on a bridge), and keeps the leases in a file so that a
// restarted daemon gives a container that kept running the address it has,
// and never gives that address to another.
package ipam

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// ErrExhausted is returned when no address is left in the pool.
var ErrExhausted = errors.New("no available IPv4 addresses on this network's address pools")

// Allocator leases the addresses of a pool. It is safe for concurrent use.
type Allocator struct {
	mu     sync.Mutex
	path   string
	pool   netip.Prefix // where addresses are handed out from
	subnet netip.Prefix // the network: its first and last address are never handed out
	gw     netip.Addr
	leases map[string]netip.Addr // owner → address
	taken  map[netip.Addr]string // address → owner
	next   netip.Addr            // where the search starts: round robin, as Docker does
}

type leaseFile struct {
	Subnet string            `json:"subnet"`
	Leases map[string]string `json:"leases"`
}

// Open loads the leases kept at path (none if it does not exist) for the
// subnet, handing out addresses from pool (the subnet itself, or a part of
// it: --fixed-cidr) and never the gateway. Leases from a file written for
// another subnet, or outside the pool, are dropped: their owners get a new
// address at their next start.
func Open(path string, subnet, pool netip.Prefix, gateway netip.Addr) (*Allocator, error) {
	subnet, pool = subnet.Masked(), pool.Masked()
	if subnet.Addr().Is4() != pool.Addr().Is4() || subnet.Addr().Is4In6() || pool.Addr().Is4In6() {
		return nil, errdefs.InvalidParameter(fmt.Errorf("ipam: pool %s and subnet %s are not of one family", pool, subnet))
	}
	if !subnet.Contains(pool.Addr()) || pool.Bits() < subnet.Bits() {
		return nil, errdefs.InvalidParameter(fmt.Errorf("ipam: pool %s is not within subnet %s", pool, subnet))
	}
	if subnet.Bits() > subnet.Addr().BitLen()-2 {
		return nil, errdefs.InvalidParameter(fmt.Errorf("ipam: subnet %s is too small", subnet))
	}
	a := &Allocator{path: path, pool: pool, subnet: subnet, gw: gateway,
		leases: map[string]netip.Addr{}, taken: map[netip.Addr]string{}, next: pool.Addr()}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return a, nil
	case err != nil:
		return nil, fmt.Errorf("ipam: read leases: %w", err)
	}
	var lf leaseFile
	if err := json.Unmarshal(b, &lf); err != nil {
		// A torn file cannot be (atomicfile); a corrupt one costs the
		// leases, which the daemon's reconciliation gives back from the
		// running containers' records.
		return a, nil
	}
	if lf.Subnet != subnet.String() {
		return a, nil
	}
	for owner, s := range lf.Leases {
		ip, err := netip.ParseAddr(s)
		if err != nil || !a.usable(ip) || a.taken[ip] != "" {
			continue
		}
		a.leases[owner], a.taken[ip] = ip, owner
		// The search goes on after the highest address leased, so that
		// a restart does not hand out at once an address just released.
		if ip.Compare(a.next) >= 0 {
			a.next = ip.Next()
		}
	}
	return a, nil
}

// usable reports whether ip may be leased: in the pool, not the subnet's
// network address (IPv6: the subnet-router anycast address), not its
// broadcast address (IPv4), not the gateway.
func (a *Allocator) usable(ip netip.Addr) bool {
	if !a.pool.Contains(ip) || ip == a.gw {
		return false
	}
	first, last := bounds(a.subnet)
	return ip != first && (ip != last || ip.Is6())
}

// bounds are the first and last addresses of p.
func bounds(p netip.Prefix) (first, last netip.Addr) {
	first = p.Masked().Addr()
	b := first.AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	last, _ = netip.AddrFromSlice(b)
	return first, last
}

// maxScan bounds the search for a free address: an IPv6 pool (a /64) is
// far larger than the leases it will ever hold.
const maxScan = 1 << 20

func poolSize(p netip.Prefix) int {
	if host := p.Addr().BitLen() - p.Bits(); host < 20 {
		return 1 << host
	}
	return maxScan
}

// Allocate leases an address to owner: the one it holds if it has one
// (asked again after a restart), else the next free one; want, if valid,
// asks for that address (taken by another owner is a conflict).
func (a *Allocator) Allocate(owner string, want netip.Addr) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.leases[owner]; ok && (!want.IsValid() || want == ip) {
		return ip, nil
	}
	var ip netip.Addr
	if want.IsValid() {
		if !a.usable(want) {
			return netip.Addr{}, errdefs.InvalidParameter(fmt.Errorf("requested address %s is not in the pool %s (or is reserved)", want, a.pool))
		}
		if o := a.taken[want]; o != "" && o != owner {
			return netip.Addr{}, errdefs.Conflict(fmt.Errorf("address already in use: %s", want))
		}
		ip = want
	} else {
		first, last := bounds(a.pool)
		n := poolSize(a.pool)
		cand := a.next
		for i := 0; i < n; i++ {
			if !a.pool.Contains(cand) || cand.Compare(last) > 0 {
				cand = first
			}
			if a.usable(cand) && a.taken[cand] == "" {
				ip = cand
				break
			}
			cand = cand.Next()
		}
		if !ip.IsValid() {
			return netip.Addr{}, errdefs.Unavailable(ErrExhausted)
		}
	}
	if old, ok := a.leases[owner]; ok {
		delete(a.taken, old)
	}
	a.leases[owner], a.taken[ip] = ip, owner
	if err := a.saveLocked(); err != nil {
		delete(a.leases, owner)
		delete(a.taken, ip)
		return netip.Addr{}, err
	}
	a.next = ip.Next()
	return ip, nil
}

// Release gives owner's address back; releasing what is not held is no
// error (a release repeated after a crash).
func (a *Allocator) Release(owner string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ip, ok := a.leases[owner]
	if !ok {
		return nil
	}
	delete(a.leases, owner)
	delete(a.taken, ip)
	return a.saveLocked()
}

// Leases is a copy of the leases, owner → address.
func (a *Allocator) Leases() map[string]netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]netip.Addr, len(a.leases))
	for k, v := range a.leases {
		out[k] = v
	}
	return out
}

// Owners lists the owners holding a lease, sorted.
func (a *Allocator) Owners() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.leases))
	for k := range a.leases {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (a *Allocator) saveLocked() error {
	lf := leaseFile{Subnet: a.subnet.String(), Leases: map[string]string{}}
	for o, ip := range a.leases {
		lf.Leases[o] = ip.String()
	}
	b, err := json.Marshal(lf)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(a.path), 0o700); err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	if err := atomicfile.Write(a.path, b, 0o600); err != nil {
		return fmt.Errorf("ipam: save leases: %w", err)
	}
	return nil
}

// ToNet converts a prefix to the net package's form (netlink's).
func ToNet(ip netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(ip.AsSlice()), Mask: net.CIDRMask(bits, ip.BitLen())}
}
