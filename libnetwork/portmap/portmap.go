// Package portmap reads a container's published ports (the API's
// PortBindings and, with -P, its exposed ports) and holds the host ports
// they take: each published host port is bound by a socket the daemon
// keeps open, so that another container, or another process, cannot take
// it meanwhile, and a port already taken is found before anything else is
// set up. An IPv4 socket is never listened on: the firewall's DNAT sends
// the traffic to the container before it could reach it. An IPv6 one is
// served by a proxy (proxy.go).
package portmap

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"sync"

	"github.com/docker/go-connections/nat"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/libnetwork/types"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Request is one port to publish: a host port in [HostPortStart,
// HostPortEnd] (0-0: any free one) on HostIP, to ContainerPort.
type Request struct {
	Proto         string
	HostIP        netip.Addr
	HostPortStart uint16
	HostPortEnd   uint16
	ContainerPort uint16
	// Twin marks the IPv6 half of a binding given without a host IP
	// (Docker publishes it on both families): it takes the port its
	// IPv4 half got.
	Twin bool
}

// Requests reads the port bindings, and with publishAll every exposed
// port without a binding (on any free host port), as Docker does. They
// are sorted, so that a container's ports are taken in the same order on
// every start.
func Requests(bindings nat.PortMap, exposed nat.PortSet, publishAll bool) ([]Request, error) {
	var out []Request
	ports := map[nat.Port][]nat.PortBinding{}
	for p, bs := range bindings {
		ports[p] = bs
	}
	if publishAll {
		for p := range exposed {
			if _, ok := ports[p]; !ok {
				ports[p] = []nat.PortBinding{{}}
			}
		}
	}
	for p, bs := range ports {
		proto, cport, err := containerPort(p)
		if err != nil {
			return nil, err
		}
		if len(bs) == 0 {
			bs = []nat.PortBinding{{}}
		}
		for _, b := range bs {
			r := Request{Proto: proto, ContainerPort: cport, HostIP: netip.IPv4Unspecified()}
			if b.HostIP != "" {
				ip, err := netip.ParseAddr(b.HostIP)
				if err != nil {
					return nil, errdefs.InvalidParameter(fmt.Errorf("invalid host IP address %q in the port binding of %s", b.HostIP, p))
				}
				if ip.Zone() != "" {
					return nil, errdefs.InvalidParameter(fmt.Errorf("invalid host IP address %q in the port binding of %s: no zone", b.HostIP, p))
				}
				r.HostIP = ip.Unmap()
			}
			if b.HostPort != "" {
				lo, hi, err := nat.ParsePortRange(b.HostPort)
				if err != nil || lo == 0 || hi > 65535 {
					return nil, errdefs.InvalidParameter(fmt.Errorf("invalid port specification: %q", b.HostPort))
				}
				r.HostPortStart, r.HostPortEnd = uint16(lo), uint16(hi)
			}
			out = append(out, r)
			if b.HostIP == "" && hostHasIPv6() {
				r.HostIP, r.Twin = netip.IPv6Unspecified(), true
				out = append(out, r)
			}
		}
	}
	out = dropShadowedTwins(out)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ContainerPort != b.ContainerPort {
			return a.ContainerPort < b.ContainerPort
		}
		if a.Proto != b.Proto {
			return a.Proto < b.Proto
		}
		if a.HostIP != b.HostIP {
			return a.HostIP.Less(b.HostIP)
		}
		return a.HostPortStart < b.HostPortStart
	})
	return out, nil
}

// dropShadowedTwins drops the IPv6 half of a binding without host IP
// when the same port is also asked for on "::" itself (a client that
// sends both halves, as Docker's inspect shows them): one socket each.
func dropShadowedTwins(in []Request) []Request {
	explicit := map[Request]bool{}
	for _, r := range in {
		if !r.Twin && r.HostIP == netip.IPv6Unspecified() {
			explicit[r] = true
		}
	}
	out := in[:0]
	for _, r := range in {
		if r.Twin {
			k := r
			k.Twin = false
			if explicit[k] {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

func containerPort(p nat.Port) (string, uint16, error) {
	proto, port := nat.SplitProtoPort(string(p))
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "", 0, errdefs.InvalidParameter(fmt.Errorf("invalid port specification: %q", string(p)))
	}
	switch proto {
	case "tcp", "udp":
	case "sctp":
		return "", 0, errdefs.NotImplemented(fmt.Errorf("publishing an sctp port (%s) is not supported by this engine", p))
	default:
		return "", 0, errdefs.InvalidParameter(fmt.Errorf("invalid proto: %s", proto))
	}
	return proto, uint16(n), nil
}

// Hold is the sockets that keep a container's host ports, and the
// proxies serving those on IPv6 addresses once Serve was called.
type Hold struct {
	mu      sync.Mutex
	fds     []int
	v6      []heldV6 // listening, not yet served
	proxies []*proxy
}

type heldV6 struct {
	fd            int
	proto         string
	containerPort uint16
}

// Close gives the ports back (and ends the proxies' connections).
func (h *Hold) Close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	fds, v6, proxies := h.fds, h.v6, h.proxies
	h.fds, h.v6, h.proxies = nil, nil, nil
	h.mu.Unlock()
	for _, fd := range fds {
		unix.Close(fd)
	}
	for _, v := range v6 {
		unix.Close(v.fd)
	}
	for _, p := range proxies {
		p.close()
	}
}

// Serve starts relaying the ports held on IPv6 addresses to the
// container's IPv4 address to.
func (h *Hold) Serve(to netip.Addr) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.v6) > 0 {
		v := h.v6[0]
		p, err := serve(v.proto, v.fd, netip.AddrPortFrom(to, v.containerPort))
		if err != nil {
			return fmt.Errorf("serving the IPv6 port of %d/%s: %w", v.containerPort, v.proto, err)
		}
		h.v6 = h.v6[1:]
		h.proxies = append(h.proxies, p)
	}
	return nil
}

func (h *Hold) add(fd int, proto string, ip netip.Addr, containerPort uint16) {
	if ip.Is4() {
		h.fds = append(h.fds, fd)
	} else {
		h.v6 = append(h.v6, heldV6{fd: fd, proto: proto, containerPort: containerPort})
	}
}

// Reserve binds a host port for each request (the first free one of its
// range, or one the kernel picks from its ephemeral range) and returns
// the bindings. Either every port is held or none is: a port already
// taken is a conflict.
func Reserve(reqs []Request) ([]types.PortBinding, *Hold, error) {
	h := &Hold{}
	var out []types.PortBinding
	// The port the IPv4 half of each binding without host IP got.
	type half struct {
		proto      string
		cport      uint16
		start, end uint16
	}
	got := map[half]uint16{}
	for _, r := range reqs {
		key := half{r.Proto, r.ContainerPort, r.HostPortStart, r.HostPortEnd}
		if r.Twin {
			if p, ok := got[key]; ok {
				r.HostPortStart, r.HostPortEnd = p, p
			}
		}
		b, fd, err := reserveOne(r)
		if err != nil {
			h.Close()
			return nil, nil, err
		}
		if r.HostIP == netip.IPv4Unspecified() {
			got[key] = b.HostPort
		}
		h.add(fd, r.Proto, r.HostIP, r.ContainerPort)
		out = append(out, b)
	}
	return out, h, nil
}

// Rebind holds again the ports a container that kept running across a
// daemon restart was given.
func Rebind(bs []types.PortBinding) (*Hold, error) {
	h := &Hold{}
	for _, b := range bs {
		ip, err := netip.ParseAddr(b.HostIP)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("port binding %v: %w", b, err)
		}
		fd, err := bindPort(b.Proto, ip, b.HostPort)
		if err != nil {
			h.Close()
			return nil, err
		}
		h.add(fd, b.Proto, ip, b.ContainerPort)
	}
	return h, nil
}

func reserveOne(r Request) (types.PortBinding, int, error) {
	b := types.PortBinding{Proto: r.Proto, HostIP: r.HostIP.String(), ContainerPort: r.ContainerPort}
	if r.HostPortStart == 0 {
		fd, err := bindPort(r.Proto, r.HostIP, 0)
		if err != nil {
			return b, 0, err
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			unix.Close(fd)
			return b, 0, fmt.Errorf("port of %s/%d: %w", r.Proto, r.ContainerPort, err)
		}
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			b.HostPort = uint16(sa.Port)
		case *unix.SockaddrInet6:
			b.HostPort = uint16(sa.Port)
		}
		return b, fd, nil
	}
	var last error
	for p := uint32(r.HostPortStart); p <= uint32(r.HostPortEnd); p++ {
		fd, err := bindPort(r.Proto, r.HostIP, uint16(p))
		if err == nil {
			b.HostPort = uint16(p)
			return b, fd, nil
		}
		last = err
		if !errdefs.IsConflict(err) {
			break
		}
	}
	return b, 0, last
}

// bindPort binds a socket of proto to ip:port (IPv4 without SO_REUSEADDR),
// so that no other socket can bind that port meanwhile. An IPv6 socket takes
// IPv6 only (its IPv4 half is a socket of its own), and a TCP one listens:
// its proxy serves it.
func bindPort(proto string, ip netip.Addr, port uint16) (int, error) {
	typ := unix.SOCK_STREAM
	if proto == "udp" {
		typ = unix.SOCK_DGRAM
	}
	family := unix.AF_INET6
	var sa unix.Sockaddr = &unix.SockaddrInet6{Port: int(port), Addr: ip.As16()}
	if ip.Is4() {
		family = unix.AF_INET
		sa = &unix.SockaddrInet4{Port: int(port), Addr: ip.As4()}
	}
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket: %w", err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			unix.Close(fd)
			return 0, fmt.Errorf("IPV6_V6ONLY: %w", err)
		}
		if typ == unix.SOCK_STREAM {
			// The proxy's connections leave TIME_WAIT sockets on the
			// port once it closed them: without SO_REUSEADDR the port
			// could not be published again for a minute. A port some
			// other socket listens on is still refused.
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
				unix.Close(fd)
				return 0, fmt.Errorf("SO_REUSEADDR: %w", err)
			}
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return 0, errdefs.Conflict(fmt.Errorf("Bind for %s failed: port is already allocated", netip.AddrPortFrom(ip, port)))
		}
		if errors.Is(err, unix.EADDRNOTAVAIL) {
			return 0, errdefs.InvalidParameter(fmt.Errorf("Bind for %s failed: the host has no address %s", netip.AddrPortFrom(ip, port), ip))
		}
		return 0, fmt.Errorf("bind %s %s: %w", proto, netip.AddrPortFrom(ip, port), err)
	}
	if family == unix.AF_INET6 && typ == unix.SOCK_STREAM {
		if err := unix.Listen(fd, 128); err != nil {
			unix.Close(fd)
			return 0, fmt.Errorf("listen %s: %w", netip.AddrPortFrom(ip, port), err)
		}
	}
	return fd, nil
}

// hostHasIPv6 is whether this host can take IPv6 sockets (a kernel with
// IPv6 disabled has no [::] to publish on).
var hostHasIPv6 = sync.OnceValue(func() bool {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Bind(fd, &unix.SockaddrInet6{Addr: netip.IPv6Loopback().As16()}) == nil
})

// PortMap is the bindings as the API shows them (NetworkSettings.Ports),
// with every exposed port, published or not.
func PortMap(bs []types.PortBinding, exposed nat.PortSet) nat.PortMap {
	out := nat.PortMap{}
	for p := range exposed {
		out[p] = nil
	}
	for _, b := range bs {
		p := nat.Port(fmt.Sprintf("%d/%s", b.ContainerPort, b.Proto))
		out[p] = append(out[p], nat.PortBinding{HostIP: b.HostIP, HostPort: strconv.Itoa(int(b.HostPort))})
	}
	return out
}
