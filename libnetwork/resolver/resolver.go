// Package resolver is the embedded DNS server of containers on
// user-defined networks, at 127.0.0.11:53 in each such container.
//
// Its sockets are made inside the container's network namespace (by a
// thread that enters it, binds, and goes back), but it is served by the
// daemon, in the daemon's namespace: the names of the container's networks
// are answered from the daemon's records, and everything else is forwarded
// to the upstream resolvers from the daemon's side, so that a loopback
// resolver of the host (127.0.0.53 of systemd-resolved, a test's server)
// is reachable although the container cannot reach it. This is Docker's
// design; unlike Docker, the server binds port 53 itself (no NAT rule in
// the container's namespace), the container's namespace being ours.
package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	vnetns "github.com/vishvananda/netns"

	// A thread left in another namespace ends with its goroutine.
	_ "github.com/sdengine/engine/pkg/mainthread"
)

// Address is where containers find the server.
const Address = "127.0.0.11"

// TTL of the answers for containers' names (Docker's).
const TTL = 600

// Lookup answers a container's name (lower case, no trailing dot) with
// the addresses of the containers called so on the networks of the asking
// container; none if the name is not one of theirs.
type Lookup func(name string) []netip.Addr

// Resolver is one container's server.
type Resolver struct {
	upstreams []string
	lookup    Lookup
	udp, tcp  *dns.Server
	wg        sync.WaitGroup
}

// Start serves at Address:53 in the namespace at nsPath: names from
// lookup, everything else forwarded to upstreams ("ip:port"), tried in
// order.
func Start(nsPath string, upstreams []string, lookup Lookup) (*Resolver, error) {
	return StartAt(nsPath, net.JoinHostPort(Address, "53"), upstreams, lookup)
}

// StartAt is Start at another address (tests); nsPath "" is the caller's
// namespace.
func StartAt(nsPath, addr string, upstreams []string, lookup Lookup) (*Resolver, error) {
	pc, l, err := listenIn(nsPath, addr)
	if err != nil {
		return nil, err
	}
	r := &Resolver{upstreams: upstreams, lookup: lookup}
	h := dns.HandlerFunc(r.serve)
	// Each server is running when StartAt returns: a Shutdown that comes
	// before ActivateAndServe started is refused ("server not started")
	// and would leave the server serving, and Close waiting, for ever.
	started := make(chan struct{}, 2)
	r.udp = &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: func() { started <- struct{}{} }}
	r.tcp = &dns.Server{Listener: l, Handler: h, NotifyStartedFunc: func() { started <- struct{}{} }}
	for _, s := range []*dns.Server{r.udp, r.tcp} {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := s.ActivateAndServe(); err != nil {
				slog.Debug("embedded DNS server ended", "err", err)
				started <- struct{}{} // never started: nothing to wait for
			}
		}()
	}
	<-started
	<-started
	return r, nil
}

// Close stops the server and closes its sockets.
func (r *Resolver) Close() {
	if r == nil {
		return
	}
	_ = r.udp.Shutdown()
	_ = r.tcp.Shutdown()
	r.wg.Wait()
}

// listenIn binds UDP and TCP at addr in the namespace at nsPath. The
// thread that enters the namespace goes back to the daemon's; one that
// cannot stays locked and ends with its goroutine, never reused.
func listenIn(nsPath, addr string) (net.PacketConn, net.Listener, error) {
	type result struct {
		pc  net.PacketConn
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var res result
		defer func() { ch <- res }()
		var orig vnetns.NsHandle = -1
		if nsPath != "" {
			var err error
			if orig, err = vnetns.Get(); err != nil {
				res.err = fmt.Errorf("current netns: %w", err)
				runtime.UnlockOSThread()
				return
			}
			defer orig.Close()
			target, err := vnetns.GetFromPath(nsPath)
			if err != nil {
				res.err = fmt.Errorf("open netns %s: %w", nsPath, err)
				runtime.UnlockOSThread()
				return
			}
			err = vnetns.Set(target)
			target.Close()
			if err != nil {
				res.err = fmt.Errorf("enter netns %s: %w", nsPath, err)
				runtime.UnlockOSThread()
				return
			}
		}
		res.pc, res.err = net.ListenPacket("udp4", addr)
		if res.err == nil {
			res.l, res.err = net.Listen("tcp4", addr)
			if res.err != nil {
				res.pc.Close()
			}
		}
		if orig >= 0 {
			if err := vnetns.Set(orig); err != nil {
				res.err = errors.Join(res.err, fmt.Errorf("return to the daemon's netns: %w", err))
				return // the thread stays locked: it dies with this goroutine
			}
		}
		runtime.UnlockOSThread()
	}()
	res := <-ch
	if res.err != nil {
		if res.pc != nil {
			res.pc.Close()
		}
		if res.l != nil {
			res.l.Close()
		}
		return nil, nil, fmt.Errorf("embedded DNS server at %s: %w", addr, res.err)
	}
	return res.pc, res.l, nil
}

func (r *Resolver) serve(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeFormatError)
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.ToLower(strings.TrimSuffix(q.Name, "."))
	if q.Qclass == dns.ClassINET && (q.Qtype == dns.TypeA || q.Qtype == dns.TypeAAAA) {
		if ips := r.lookup(name); len(ips) > 0 {
			m := new(dns.Msg)
			m.SetReply(req)
			m.Authoritative = true
			m.RecursionAvailable = true
			if q.Qtype == dns.TypeA {
				for _, ip := range ips {
					if ip.Is4() {
						m.Answer = append(m.Answer, &dns.A{
							Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: TTL},
							A:   net.IP(ip.AsSlice()),
						})
					}
				}
			}
			// AAAA of a container's name: the name exists, with no IPv6
			// address (NOERROR, no answer), so that a resolver does not
			// go on to the search domains.
			_ = w.WriteMsg(m)
			return
		}
	}
	r.forward(w, req)
}

// forward asks the upstreams in order, by the client's transport (UDP
// retried over TCP when the answer is truncated); SERVFAIL if none answers.
func (r *Resolver) forward(w dns.ResponseWriter, req *dns.Msg) {
	proto := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		proto = "tcp"
	}
	for _, up := range r.upstreams {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c := &dns.Client{Net: proto, Timeout: 5 * time.Second}
		resp, _, err := c.ExchangeContext(ctx, req, up)
		if err == nil && resp.Truncated && proto == "udp" {
			tc := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
			if r2, _, err2 := tc.ExchangeContext(ctx, req, up); err2 == nil {
				resp = r2
			}
		}
		cancel()
		if err != nil {
			slog.Debug("embedded DNS: upstream failed", "upstream", up, "name", req.Question[0].Name, "err", err)
			continue
		}
		resp.Id = req.Id
		_ = w.WriteMsg(resp)
		return
	}
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeServerFailure)
	_ = w.WriteMsg(m)
}

// Upstreams are the nameservers of a resolv.conf as "ip:53".
func Upstreams(resolvConf string) []string {
	var out []string
	for _, line := range strings.Split(resolvConf, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if ip, err := netip.ParseAddr(strings.Split(f[1], "%")[0]); err == nil {
				out = append(out, net.JoinHostPort(ip.String(), "53"))
			}
		}
	}
	return out
}
