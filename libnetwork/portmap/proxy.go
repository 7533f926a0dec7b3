package portmap

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// The firewall's DNAT rules are IPv4 only (the table is of the ip family,
// and a container on an IPv4-only network has no IPv6 address to send
// IPv6 traffic to). A port published on an IPv6 host address ("::", the
// IPv6 half of a binding without a host IP, as Docker makes it; or an
// address given) is served as Docker's userland proxy serves it: its
// socket listens, and each connection (or UDP flow) is relayed to the
// container's IPv4 address. The proxy runs in the daemon: a daemon that
// is down leaves IPv6 clients unanswered (IPv4 keeps working through the
// rules), and the next daemon serves them again (Rebind).

// udpFlowIdle is how long a UDP flow with no traffic either way is kept.
const udpFlowIdle = 90 * time.Second

// proxy relays one host socket to the container's address.
type proxy struct {
	mu     sync.Mutex
	closed bool
	ln     net.Listener   // tcp
	pc     net.PacketConn // udp
	conns  map[net.Conn]struct{}
	done   sync.WaitGroup
}

// serve starts relaying fd (a bound socket of proto; for tcp already
// listening) to to; fd is the proxy's from then on.
func serve(proto string, fd int, to netip.AddrPort) (*proxy, error) {
	f := os.NewFile(uintptr(fd), "port "+proto)
	defer f.Close() // net.File* dup the descriptor
	p := &proxy{conns: map[net.Conn]struct{}{}}
	var err error
	if proto == "udp" {
		if p.pc, err = net.FilePacketConn(f); err != nil {
			return nil, err
		}
		p.done.Add(1)
		go p.relayUDP(to)
		return p, nil
	}
	if p.ln, err = net.FileListener(f); err != nil {
		return nil, err
	}
	p.done.Add(1)
	go p.acceptTCP(to)
	return p, nil
}

// track records c unless the proxy is closed (then c is closed).
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *proxy) acceptTCP(to netip.AddrPort) {
	defer p.done.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				slog.Warn("port proxy: accept", "addr", p.ln.Addr(), "err", err)
			}
			return
		}
		go p.relayTCP(c, to)
	}
}

func (p *proxy) relayTCP(c net.Conn, to netip.AddrPort) {
	if !p.track(c) {
		return
	}
	defer p.untrack(c)
	b, err := net.DialTimeout("tcp", to.String(), 10*time.Second)
	if err != nil {
		slog.Debug("port proxy: dial the container", "to", to, "err", err)
		return
	}
	if !p.track(b) {
		return
	}
	defer p.untrack(b)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		halfCopy(b, c)
	}()
	halfCopy(c, b)
	wg.Wait()
}

// halfCopy copies src to dst, then closes dst's writing side (the peer
// sees EOF and may still answer).
func halfCopy(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		dst.Close()
	}
}

// relayUDP keeps one connected socket to the container per client: what
// the container answers on it goes back to that client.
func (p *proxy) relayUDP(to netip.AddrPort) {
	defer p.done.Done()
	flows := map[string]net.Conn{}
	var mu sync.Mutex
	buf := make([]byte, 65535)
	for {
		n, from, err := p.pc.ReadFrom(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				slog.Warn("port proxy: udp read", "addr", p.pc.LocalAddr(), "err", err)
			}
			return
		}
		key := from.String()
		mu.Lock()
		c := flows[key]
		mu.Unlock()
		if c == nil {
			if c, err = net.Dial("udp", to.String()); err != nil {
				slog.Debug("port proxy: udp dial the container", "to", to, "err", err)
				continue
			}
			if !p.track(c) {
				return
			}
			mu.Lock()
			flows[key] = c
			mu.Unlock()
			go func(c net.Conn, client net.Addr) {
				defer func() {
					mu.Lock()
					delete(flows, key)
					mu.Unlock()
					p.untrack(c)
				}()
				rb := make([]byte, 65535)
				for {
					_ = c.SetReadDeadline(time.Now().Add(udpFlowIdle))
					n, err := c.Read(rb)
					if err != nil {
						return
					}
					if _, err := p.pc.WriteTo(rb[:n], client); err != nil {
						return
					}
				}
			}(c, from)
		}
		_ = c.SetReadDeadline(time.Now().Add(udpFlowIdle))
		_, _ = c.Write(buf[:n])
	}
}

// close stops relaying: the socket is closed (the port is free again) and
// so is every connection it relays.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
	}
	if p.pc != nil {
		p.pc.Close()
	}
	for c := range conns {
		c.Close()
	}
	p.done.Wait()
}
