package ipam

import (
	"fmt"
	"net/netip"

	"github.com/sdengine/engine/pkg/errdefs"
)

// DefaultPools are Docker's default address pools for networks created
// without --subnet: 172.17.0.0/16 to 172.31.0.0/16, then 192.168.0.0/16
// cut into /20s.
var DefaultPools = func() []Pool {
	var out []Pool
	for i := 17; i <= 31; i++ {
		out = append(out, Pool{Base: netip.PrefixFrom(netip.AddrFrom4([4]byte{172, byte(i), 0, 0}), 16), Size: 16})
	}
	return append(out, Pool{Base: netip.MustParsePrefix("192.168.0.0/16"), Size: 20})
}()

// Pool is a range cut into subnets of Size bits.
type Pool struct {
	Base netip.Prefix
	Size int
}

// ErrPoolsExhausted is Docker's message when no default pool is left.
var ErrPoolsExhausted = errdefs.Unavailable(fmt.Errorf("all predefined address pools have been fully subnetted"))

// Overlaps reports whether two prefixes share an address.
func Overlaps(a, b netip.Prefix) bool {
	return a.Overlaps(b)
}

// NextSubnet is the first subnet of the pools that overlaps none of used
// (the engine's networks, and the host's addresses and routes).
func NextSubnet(pools []Pool, used []netip.Prefix) (netip.Prefix, error) {
	for _, p := range pools {
		base := p.Base.Masked()
		if p.Size < base.Bits() || p.Size > 30 || !base.Addr().Is4() {
			continue
		}
		step := uint32(1) << (32 - p.Size)
		_, last := bounds(base)
		for cur := base.Addr(); ; {
			cand := netip.PrefixFrom(cur, p.Size)
			free := true
			for _, u := range used {
				if u.Overlaps(cand) {
					free = false
					break
				}
			}
			if free {
				return cand, nil
			}
			v := u32(cur) + step
			if v == 0 || v > u32(last) {
				break
			}
			cur = from32(v)
		}
	}
	return netip.Prefix{}, ErrPoolsExhausted
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func from32(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// FirstHost is a subnet's first usable address: a network's default
// gateway, as Docker chooses it.
func FirstHost(p netip.Prefix) netip.Addr {
	return p.Masked().Addr().Next()
}
