//go:build integration

package integrationcli

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// TestIPv6Networks: a network created with --ipv6 and an IPv6 subnet gives
// its containers an IPv6 address (asked for with --ip6, or the next free
// one) and default route, shown by inspect and inside the container, and
// they reach each other over IPv6; the default bridge gets IPv6 with
// --ipv6 --fixed-cidr-v6; an IPv6 subnet without --ipv6 is refused;
// nothing is left at the end.
func TestIPv6Networks(t *testing.T) {
	n := claimBridgeNumber(t)
	bridge := fmt.Sprintf("sdit%d", n)
	v6def := fmt.Sprintf("fd00:5:%d::/64", n)
	d := NewDaemon(t, "--bridge", bridge, "--bip", fmt.Sprintf("10.213.%d.1/24", n), "--ip-forward=false",
		"--ipv6", "--fixed-cidr-v6", v6def)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	sub6 := fmt.Sprintf("fd00:6:%d::/64", n)
	if r := d.CLI("network", "create", "--subnet", sub6, "nov6"); r.Code == 0 || !strings.Contains(r.Stderr, "--ipv6") {
		t.Errorf("an IPv6 subnet without --ipv6: %v", r)
	}
	ubr := fmt.Sprintf("sdv6%d", n)
	netID := strings.TrimSpace(d.MustCLI(t, "network", "create", "--ipv6", "--subnet", fmt.Sprintf("10.221.%d.0/24", n),
		"--subnet", sub6, "-o", "com.docker.network.bridge.name="+ubr, "v6net"))
	if got := strings.TrimSpace(d.MustCLI(t, "network", "inspect", "-f", "{{.EnableIPv6}} {{range .IPAM.Config}}{{.Subnet}},{{.Gateway}} {{end}}", "v6net")); got != fmt.Sprintf("true 10.221.%d.0/24,10.221.%d.1 %s,fd00:6:%d::1", n, n, sub6, n) {
		t.Errorf("network inspect: %q", got)
	}
	want1 := fmt.Sprintf("fd00:6:%d::10", n)
	c1 := remember(d.MustCLI(t, "run", "-d", "--name", "c1", "--network", "v6net", "--ip6", want1, "busybox", "sleep", "300"))
	c2 := remember(d.MustCLI(t, "run", "-d", "--name", "c2", "--network", "v6net", "busybox", "sleep", "300"))
	def := remember(d.MustCLI(t, "run", "-d", "--name", "def", "busybox", "sleep", "300"))
	v6of := func(name, net string) string {
		return strings.TrimSpace(d.MustCLI(t, "inspect", "-f", "{{(index .NetworkSettings.Networks \""+net+"\").GlobalIPv6Address}}", name))
	}
	if got := v6of("c1", "v6net"); got != want1 {
		t.Errorf("c1's IPv6 address %q, want %s", got, want1)
	}
	a2 := v6of("c2", "v6net")
	if ip, err := netip.ParseAddr(a2); err != nil || !netip.MustParsePrefix(sub6).Contains(ip) {
		t.Errorf("c2's IPv6 address %q, not in %s", a2, sub6)
	}
	if ip, err := netip.ParseAddr(v6of("def", "bridge")); err != nil || !netip.MustParsePrefix(v6def).Contains(ip) {
		t.Errorf("the default bridge's container has IPv6 address %q, not in %s", v6of("def", "bridge"), v6def)
	}
	if out := d.MustCLI(t, "exec", "c1", "ip", "-6", "addr", "show", "eth0"); !strings.Contains(out, want1+"/64") {
		t.Errorf("c1's eth0 lacks %s:\n%s", want1, out)
	}
	if out := d.MustCLI(t, "exec", "c1", "ip", "-6", "route", "show"); !strings.Contains(out, fmt.Sprintf("default via fd00:6:%d::1 dev eth0", n)) {
		t.Errorf("c1's IPv6 default route:\n%s", out)
	}
	if r := d.CLI("exec", "c1", "ping", "-c", "1", "-W", "2", a2); r.Code != 0 {
		t.Errorf("c1 → c2 over IPv6 (%s): %v", a2, r)
	}
	if out := d.MustCLI(t, "network", "inspect", "-f", "{{range .Containers}}{{.IPv6Address}} {{end}}", "v6net"); !strings.Contains(out, want1+"/64") {
		t.Errorf("network inspect's containers lack c1's IPv6 address: %q", out)
	}
	// A taken address, and one outside the subnet, are refused.
	if r := d.CLI("run", "--rm", "--network", "v6net", "--ip6", want1, "busybox", "true"); r.Code == 0 {
		t.Error("a second container got c1's IPv6 address")
	}
	if r := d.CLI("run", "--rm", "--network", "v6net", "--ip6", "fd99::5", "busybox", "true"); r.Code == 0 {
		t.Error("an IPv6 address outside the subnet was given")
	}
	// An IPv6 --ip-range (beside an IPv4 subnet: the range goes to the
	// subnet that holds it, as with Docker's CLI): addresses come from it.
	rbr := fmt.Sprintf("sdr6%d", n)
	rng := fmt.Sprintf("fd00:7:%d::100/120", n)
	rangeID := strings.TrimSpace(d.MustCLI(t, "network", "create", "--ipv6", "--subnet", fmt.Sprintf("10.222.%d.0/24", n), "--subnet", fmt.Sprintf("fd00:7:%d::/64", n),
		"--ip-range", rng, "-o", "com.docker.network.bridge.name="+rbr, "v6range"))
	if got := strings.TrimSpace(d.MustCLI(t, "network", "inspect", "-f", "{{range .IPAM.Config}}{{if .IPRange}}{{.IPRange}}{{end}}{{end}}", "v6range")); got != rng {
		t.Errorf("v6range's ip ranges: %q, want %q", got, rng)
	}
	r3 := remember(d.MustCLI(t, "run", "-d", "--name", "r3", "--network", "v6range", "busybox", "sleep", "300"))
	if ip, err := netip.ParseAddr(v6of("r3", "v6range")); err != nil || !netip.MustParsePrefix(rng).Contains(ip) {
		t.Errorf("r3's IPv6 address %q, not in the range %s", v6of("r3", "v6range"), rng)
	}
	if r := d.CLI("network", "create", "--ipv6", "--subnet", fmt.Sprintf("fd00:8:%d::/64", n), "--ip-range", "fd00:9::/120", "badrange"); r.Code == 0 {
		t.Errorf("an IPv6 range outside its subnet: %v", r)
	}
	d.MustCLI(t, "rm", "-f", "c1", "c2", "def", "r3")
	d.MustCLI(t, "network", "rm", "v6net", "v6range")
	checkNoUserVeths(t, rangeID, r3)
	checkNoNetworkLeft(t, d, rbr)
	d.Stop(t)
	checkNoUserVeths(t, netID, c1, c2)
	checkNoNetworkLeft(t, d, ubr)
	checkNoNetworkLeft(t, d, bridge, def)
	for _, br := range []string{bridge, ubr} {
		if b, err := os.ReadFile(d.Root + "/network/" + br + "-leases6.json"); err == nil && !strings.Contains(string(b), `"leases":{}`) {
			t.Errorf("IPv6 leases left on %s: %s", br, b)
		}
	}
}
