package bridge

import (
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	vnetns "github.com/vishvananda/netns"

	"github.com/sdengine/engine/internal/testenv"
	"github.com/sdengine/engine/libnetwork/netns"
	"github.com/sdengine/engine/libnetwork/portmap"
	"github.com/sdengine/engine/pkg/errdefs"
)

// The tests run in a network namespace of their own (TestMain re-executes
// the binary under unshare -n), so that the bridge, its rules and every
// packet stay there.
const inNetnsVar = "SDENGINE_BRIDGE_TEST_NETNS"

func TestMain(m *testing.M) {
	if os.Getenv(inNetnsVar) == "" && os.Geteuid() == 0 {
		testenv.Reexec(inNetnsVar, "-n")
	}
	os.Exit(m.Run())
}

func TestHostResolvConf(t *testing.T) {
	got := HostResolvConf("# x\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nsearch example.com\n")
	if want := "# x\nnameserver 10.0.0.2\nsearch example.com\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	got = HostResolvConf("nameserver 127.0.0.53\noptions edns0\n")
	if want := "options edns0\nnameserver 8.8.8.8\nnameserver 8.8.4.4\n"; got != want {
		t.Errorf("only loopback: got %q want %q", got, want)
	}
}

// listenIn listens on TCP port in the namespace at path.
func listenIn(t *testing.T, path string, port string) net.Listener {
	t.Helper()
	ch := make(chan any)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		h, err := netns.Open(path)
		if err != nil {
			ch <- err
			return
		}
		if err := vnetns.Set(h); err != nil {
			ch <- err
			return
		}
		l, err := net.Listen("tcp4", "0.0.0.0:"+port)
		if err != nil {
			ch <- err
			return
		}
		ch <- l
	}()
	switch v := (<-ch).(type) {
	case net.Listener:
		return v
	case error:
		t.Fatal(v)
	}
	return nil
}

func TestAttachPublishDetach(t *testing.T) {
	testenv.RequireRoot(t)
	lo := exec.Command("ip", "link", "set", "lo", "up")
	if out, err := lo.CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v %s", err, out)
	}
	dir := t.TempDir()
	cfg := Config{Name: "sdt0", BIP: "10.77.0.1/24", IPTables: true, StateDir: dir, NetnsDir: filepath.Join(dir, "netns")}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("ab", 32)
	reqs := []portmap.Request{{Proto: "tcp", HostIP: netip.MustParseAddr("127.0.0.1"), HostPortStart: 18080, HostPortEnd: 18080, ContainerPort: 80}}
	if err := netns.Create(b.NetnsPath(id)); err != nil {
		t.Fatal(err)
	}
	ep, err := b.Attach(id, AttachOptions{NetnsPath: b.NetnsPath(id), DefaultRoute: true, Ports: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if ep.IPAddress != "10.77.0.2" || ep.Gateway != "10.77.0.1" || ep.MacAddress != "02:42:0a:4d:00:02" || ep.PrefixLen != 24 {
		t.Errorf("endpoint %+v", ep)
	}
	// The same host port for another container is a conflict, and
	// nothing of that attach is left.
	other := strings.Repeat("cd", 32)
	if _, err := b.Attach(other, AttachOptions{NetnsPath: b.NetnsPath(other), Ports: reqs}); !errdefs.IsConflict(err) {
		t.Fatalf("second publish of 18080: %v", err)
	}
	if len(b.ipam.Owners()) != 1 {
		t.Errorf("lease left by the failed attach: %v", b.ipam.Owners())
	}

	l := listenIn(t, ep.SandboxKey, "80")
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = c.Write([]byte("hello from the container\n"))
			c.Close()
		}
	}()
	for _, addr := range []string{"127.0.0.1:18080", "10.77.0.2:80"} {
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		got, _ := io.ReadAll(c)
		c.Close()
		if string(got) != "hello from the container\n" {
			t.Errorf("%s: got %q", addr, got)
		}
		if addr == "127.0.0.1:18080" {
			go func() {
				c, err := l.Accept()
				if err == nil {
					_, _ = c.Write([]byte("hello from the container\n"))
					c.Close()
				}
			}()
		}
	}

	// A restarted daemon: the same bridge, the container restored.
	b2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Close(false)
	if err := b2.Restore(id, ep); err != nil {
		t.Fatal(err)
	}
	if err := b2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := b2.ipam.Leases()[id]; got.String() != "10.77.0.2" {
		t.Errorf("lease after restore: %v", got)
	}
	if err := b2.Detach(id); err != nil {
		t.Fatal(err)
	}
	if err := netns.Remove(ep.SandboxKey); err != nil {
		t.Fatal(err)
	}
	if err := b2.Close(true); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("ip", "-o", "link").CombinedOutput()
	if strings.Contains(string(out), "sdt0") || strings.Contains(string(out), "veth") {
		t.Errorf("links left:\n%s", out)
	}
	if out, _ := exec.Command("nft", "list", "tables").CombinedOutput(); strings.Contains(string(out), "sdengine") {
		t.Errorf("table left: %s", out)
	}
}

// TestIPv6AndPeers: a bridge with IPv6 gives the container an IPv6
// address and both default routes; SetPeers writes the isolation rules
// into the bridge's forward chain (and Reconcile keeps them); Detach
// releases both leases.
func TestIPv6AndPeers(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	cfg := Config{Name: "sdt6", BIP: "10.78.0.1/24", BIP6: "fd00:78::1/64", IPTables: true, StateDir: dir, NetnsDir: filepath.Join(dir, "netns"),
		NetworkName: "v6", NetworkID: strings.Repeat("12", 32)}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Destroy()
	if b.Subnet6().String() != "fd00:78::/64" || b.Gateway6().String() != "fd00:78::1" {
		t.Errorf("IPv6 subnet %s gateway %s", b.Subnet6(), b.Gateway6())
	}
	id := strings.Repeat("ef", 32)
	if err := netns.Create(b.NetnsPath(id)); err != nil {
		t.Fatal(err)
	}
	defer netns.Remove(b.NetnsPath(id))
	ep, err := b.Attach(id, AttachOptions{NetnsPath: b.NetnsPath(id), DefaultRoute: true, IP6: netip.MustParseAddr("fd00:78::10"), GwPriority: 5})
	if err != nil {
		t.Fatal(err)
	}
	if ep.IPv6Address != "fd00:78::10" || ep.IPv6PrefixLen != 64 || ep.IPv6Gateway != "fd00:78::1" || ep.GwPriority != 5 {
		t.Errorf("endpoint %+v", ep)
	}
	out, err := exec.Command("nsenter", "--net="+b.NetnsPath(id), "ip", "-6", "route", "show").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "default via fd00:78::1 dev eth0") || !strings.Contains(string(out), "fd00:78::/64 dev eth0") {
		t.Errorf("IPv6 routes in the container: %v\n%s", err, out)
	}
	if err := b.SetPeers([]string{"sdt6", "sdtother"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Reconcile(); err != nil {
		t.Fatal(err)
	}
	table, _ := exec.Command("nft", "list", "table", "ip", "sdengine-sdt6").CombinedOutput()
	if !strings.Contains(string(table), `iifname "sdt6" oifname "sdtother" drop`) || strings.Contains(string(table), `oifname "sdt6" drop`) {
		t.Errorf("isolation rules:\n%s", table)
	}
	if _, err := b.Attach(strings.Repeat("01", 32), AttachOptions{NetnsPath: b.NetnsPath(id), IfName: "eth1", IP6: netip.MustParseAddr("fd00:78::10")}); !errdefs.IsConflict(err) {
		t.Errorf("a taken IPv6 address: %v", err)
	}
	if err := b.Detach(id); err != nil {
		t.Fatal(err)
	}
	if len(b.ipam.Owners()) != 0 || len(b.ipam6.Owners()) != 0 {
		t.Errorf("leases left: %v %v", b.ipam.Owners(), b.ipam6.Owners())
	}
}
