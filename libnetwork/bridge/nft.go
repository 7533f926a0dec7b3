package bridge

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/libnetwork/types"
)

// The firewall is one nftables table of the daemon's own per bridge,
// "sdengine-<bridge>" (family ip), so that it coexists with Docker's and
// anyone else's rules and two engines side by side never touch each
// other's: nothing outside it is flushed or changed. It is written whole,
// in one transaction, each time (at start, and whenever a published port
// comes or goes): the rules are few, and a rebuild leaves nothing stale
// after a crash.
//
//	chain postrouting (nat):  the bridge's subnet leaving by another interface is masqueraded (outgoing NAT);
//	                          127.0.0.0/8 sent to the bridge (a published port reached on loopback) and
//	                          the subnet sent back to the bridge after a DNAT (hairpin) are masqueraded,
//	                          so that the container's answer comes back through the host
//	chain prerouting, output (nat): traffic to a local address jumps to "ports"
//	chain ports:              one DNAT per published port
//
// Loopback works without a userland proxy (as Docker's --userland-proxy=false):
// route_localnet is set on the bridge only, so that 127.0.0.1 may be DNATed to it.

// ctStatusDNAT is IPS_DST_NAT: the connection's destination was rewritten.
const ctStatusDNAT = 1 << 5

func tableName(bridge string) string { return "sdengine-" + bridge }

func ifname(n string) []byte {
	b := make([]byte, 16)
	copy(b, n)
	return b
}

// saddrIn matches the IPv4 source in prefix.
func addrIn(offset uint32, p netip.Prefix) []expr.Any {
	mask := ipam4Mask(p.Bits())
	a := p.Masked().Addr().As4()
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]},
	}
}

func ipam4Mask(bits int) []byte {
	m := uint32(0xffffffff) << (32 - bits)
	if bits == 0 {
		m = 0
	}
	return binaryutil.BigEndian.PutUint32(m)
}

func oif(op expr.CmpOp, name string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: op, Register: 1, Data: ifname(name)},
	}
}

func cat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// writeTable replaces the bridge's table with one for its subnet and the
// given published ports (container address → bindings).
// An internal network gets a filter chain in the forward hook dropping
// what would be routed into or out of the bridge.
//
// Networks are isolated from one another as in Docker: the forward chain
// drops what would be routed from this bridge to any of peers (the
// engine's other bridges); each peer's table drops the way back.
func writeTable(bridge string, subnet netip.Prefix, masquerade, internal bool, peers []string, ports map[netip.Addr][]types.PortBinding) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Name: tableName(bridge), Family: nftables.TableFamilyIPv4}
	// Adding then deleting always succeeds, whether the table existed or
	// not; the new one is added in the same transaction.
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	post := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	pre := c.AddChain(&nftables.Chain{Name: "prerouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
	out := c.AddChain(&nftables.Chain{Name: "output", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	pc := c.AddChain(&nftables.Chain{Name: "ports", Table: t})

	if internal || len(peers) > 0 {
		fwd := c.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter})
		drop := []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}
		iif := func(op expr.CmpOp) []expr.Any {
			return []expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Cmp{Op: op, Register: 1, Data: ifname(bridge)}}
		}
		if internal {
			c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(iif(expr.CmpOpEq), oif(expr.CmpOpNeq, bridge), drop)})
			c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(oif(expr.CmpOpEq, bridge), iif(expr.CmpOpNeq), drop)})
		}
		for _, p := range peers {
			if p == bridge {
				continue
			}
			c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(iif(expr.CmpOpEq), oif(expr.CmpOpEq, p), drop)})
		}
	}
	masq := []expr.Any{&expr.Masq{}}
	if masquerade {
		c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: cat(addrIn(12, subnet), oif(expr.CmpOpNeq, bridge), masq)})
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: cat(oif(expr.CmpOpEq, bridge), addrIn(12, netip.MustParsePrefix("127.0.0.0/8")), masq)})
	c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: cat(oif(expr.CmpOpEq, bridge), addrIn(12, subnet), []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(ctStatusDNAT), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}, masq)})
	local := []expr.Any{
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
		&expr.Verdict{Kind: expr.VerdictJump, Chain: pc.Name},
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: local})
	c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: local})
	for ip, bs := range ports {
		for _, b := range bs {
			if hip, err := netip.ParseAddr(b.HostIP); err == nil && !hip.Is4() {
				continue // IPv6: the port's proxy serves it (portmap)
			}
			c.AddRule(&nftables.Rule{Table: t, Chain: pc, Exprs: dnat(ip, b)})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: write table %s: %w", t.Name, err)
	}
	return nil
}

func dnat(ip netip.Addr, b types.PortBinding) []expr.Any {
	var e []expr.Any
	if hip, err := netip.ParseAddr(b.HostIP); err == nil && !hip.IsUnspecified() {
		a := hip.As4()
		e = append(e,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]})
	}
	proto := byte(unix.IPPROTO_TCP)
	if b.Proto == "udp" {
		proto = unix.IPPROTO_UDP
	}
	to := ip.As4()
	return append(e,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(b.HostPort)},
		&expr.Immediate{Register: 1, Data: to[:]},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(b.ContainerPort)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	)
}

// deleteTable removes the bridge's table, if there is one.
func deleteTable(bridge string) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Name: tableName(bridge), Family: nftables.TableFamilyIPv4}
	c.AddTable(t)
	c.DelTable(t)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: delete table %s: %w", t.Name, err)
	}
	return nil
}
