// Package portmap reads a container's published ports (the API's
// PortBindings and, with -P, its exposed ports) and holds the host ports
// they take: each published host port is bound by a socket the daemon
// keeps open (never listened on: the firewall's DNAT sends the traffic to
// the container before it could reach the socket), so that another
// container, or another process, cannot take it meanwhile, and a port
// already taken is found before anything else is set up.
package portmap

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"

	"github.com/docker/go-connections/nat"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/libnetwork"
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
				if !ip.Unmap().Is4() {
					if ip.IsUnspecified() {
						continue // "::": the IPv4 binding is what this engine makes
					}
					return nil, errdefs.NotImplemented(fmt.Errorf("publishing on the IPv6 address %s is not supported by this engine", ip))
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
		}
	}
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

// Hold is the sockets that keep a container's host ports.
type Hold struct{ fds []int }

// Close gives the ports back.
func (h *Hold) Close() {
	if h == nil {
		return
	}
	for _, fd := range h.fds {
		unix.Close(fd)
	}
	h.fds = nil
}

// Reserve binds a host port for each request (the first free one of its
// range, or one the kernel picks from its ephemeral range) and returns
// the bindings. Either every port is held or none is: a port already
// taken is a conflict.
func Reserve(reqs []Request) ([]libnetwork.PortBinding, *Hold, error) {
	h := &Hold{}
	var out []libnetwork.PortBinding
	for _, r := range reqs {
		b, fd, err := reserveOne(r)
		if err != nil {
			h.Close()
			return nil, nil, err
		}
		h.fds = append(h.fds, fd)
		out = append(out, b)
	}
	return out, h, nil
}

// Rebind holds again the ports a container that kept running across a
// daemon restart was given.
func Rebind(bs []libnetwork.PortBinding) (*Hold, error) {
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
		h.fds = append(h.fds, fd)
	}
	return h, nil
}

func reserveOne(r Request) (libnetwork.PortBinding, int, error) {
	b := libnetwork.PortBinding{Proto: r.Proto, HostIP: r.HostIP.String(), ContainerPort: r.ContainerPort}
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
		b.HostPort = uint16(sa.(*unix.SockaddrInet4).Port)
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

// bindPort binds a socket of proto to ip:port without SO_REUSEADDR, so
// that no other socket can bind that port meanwhile.
func bindPort(proto string, ip netip.Addr, port uint16) (int, error) {
	typ := unix.SOCK_STREAM
	if proto == "udp" {
		typ = unix.SOCK_DGRAM
	}
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(port), Addr: ip.As4()}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return 0, errdefs.Conflict(fmt.Errorf("Bind for %s:%d failed: port is already allocated", ip, port))
		}
		if errors.Is(err, unix.EADDRNOTAVAIL) {
			return 0, errdefs.InvalidParameter(fmt.Errorf("Bind for %s:%d failed: the host has no address %s", ip, port, ip))
		}
		return 0, fmt.Errorf("bind %s %s:%d: %w", proto, ip, port, err)
	}
	return fd, nil
}

// PortMap is the bindings as the API shows them (NetworkSettings.Ports),
// with every exposed port, published or not.
func PortMap(bs []libnetwork.PortBinding, exposed nat.PortSet) nat.PortMap {
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
