package portmap

import (
	"bufio"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/docker/go-connections/nat"
)

// A port published on an IPv6 address is relayed to the container's
// IPv4 address, TCP and UDP, until the hold is closed.
func TestIPv6PortsAreProxied(t *testing.T) {
	if !hostHasIPv6() {
		t.Fatal("this host has no IPv6 loopback; the proxy cannot be tested")
	}
	// The "container": an echo server on 127.0.0.1, TCP and UDP.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				c.Write([]byte("tcp:" + line))
			}()
		}
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	uc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := uc.ReadFrom(buf)
			if err != nil {
				return
			}
			uc.WriteTo(append([]byte("udp:"), buf[:n]...), from)
		}
	}()

	lo6 := netip.IPv6Loopback()
	bs, h, err := Reserve([]Request{{Proto: "tcp", HostIP: lo6, ContainerPort: port}, {Proto: "udp", HostIP: lo6, ContainerPort: port}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Serve(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	tcpAt := net.JoinHostPort("::1", strconv.Itoa(int(bs[0].HostPort)))
	c, err := net.DialTimeout("tcp", tcpAt, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("hello\n"))
	got, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if got != "tcp:hello\n" {
		t.Errorf("through the TCP proxy: %q", got)
	}

	u, err := net.Dial("udp", net.JoinHostPort("::1", strconv.Itoa(int(bs[1].HostPort))))
	if err != nil {
		t.Fatal(err)
	}
	u.SetDeadline(time.Now().Add(5 * time.Second))
	u.Write([]byte("ping"))
	buf := make([]byte, 100)
	n, err := u.Read(buf)
	u.Close()
	if err != nil || string(buf[:n]) != "udp:ping" {
		t.Errorf("through the UDP proxy: %q %v", buf[:n], err)
	}

	h.Close()
	if c, err := net.DialTimeout("tcp", tcpAt, time.Second); err == nil {
		c.Close()
		t.Error("the IPv6 port still answers after the hold was closed")
	}
	// And the port is free again.
	again, h2, err := Reserve([]Request{{Proto: "tcp", HostIP: lo6, HostPortStart: bs[0].HostPort, HostPortEnd: bs[0].HostPort, ContainerPort: port}})
	if err != nil {
		t.Fatalf("the port was not given back: %v", err)
	}
	h2.Close()
	_ = again
	// A port some process listens on is still refused.
	busy, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	bp := uint16(busy.Addr().(*net.TCPAddr).Port)
	if _, h3, err := Reserve([]Request{{Proto: "tcp", HostIP: lo6, HostPortStart: bp, HostPortEnd: bp, ContainerPort: port}}); err == nil {
		h3.Close()
		t.Errorf("[::1]:%d, which another socket listens on, was taken", bp)
	}
}

// A binding without host IP takes the same port on both families.
func TestTwinTakesTheSamePort(t *testing.T) {
	if !hostHasIPv6() {
		t.Fatal("this host has no IPv6")
	}
	reqs, err := Requests(nat.PortMap{"80/tcp": {{}}}, nil, false)
	if err != nil || len(reqs) != 2 {
		t.Fatalf("%v %v", reqs, err)
	}
	bs, h, err := Reserve(reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if bs[0].HostPort != bs[1].HostPort || bs[0].HostIP != "0.0.0.0" || bs[1].HostIP != "::" {
		t.Errorf("bindings: %+v", bs)
	}
}
