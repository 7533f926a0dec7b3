package cni

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/sdengine/engine/cri/podns"
)

// pluginDir is where hack/cni-plugins builds the CNI plugins.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SDENGINE_CNI_BIN")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "sdengine", "cni", "bin")
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("CNI plugin %s missing (run hack/cni-plugins): %v", p, err)
		}
	}
	return dir
}

func writeConf(t *testing.T, dir, bridge, subnet string) {
	t.Helper()
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "podnet-test",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}, "backend": "nftables"}
  ]
}`, bridge, subnet, filepath.Join(dir, "ipam"))
	if err := os.WriteFile(filepath.Join(dir, "10-podnet.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSetupAndTeardown(t *testing.T) {
	bin := pluginDir(t)
	tmp := t.TempDir()
	m, err := New(Config{ConfDir: tmp, BinDirs: []string{bin}, CacheDir: filepath.Join(tmp, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Status(); err == nil || !strings.Contains(err.Error(), "no network configuration") {
		t.Fatalf("Status with no configuration = %v", err)
	}
	bridge := fmt.Sprintf("cnit%d", os.Getpid()%100000)
	writeConf(t, tmp, bridge, "10.231.7.0/24")
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(bridge); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	if err := m.Status(); err != nil {
		t.Fatal(err)
	}
	// portmap leaves its (then empty) nftables table: remove it unless it
	// was there before the test.
	if exec.Command("nft", "list", "table", "ip", "cni_hostport").Run() != nil {
		t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "ip", "cni_hostport").Run() })
	}

	nsDir := filepath.Join(tmp, "ns")
	ns, err := podns.Pin(nsDir, podns.Options{Net: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = podns.Release(nsDir) })
	pod := Pod{ID: "0123456789ab", Name: "p", Namespace: "default", UID: "u1", NetNS: ns.Net,
		PortMappings: []PortMapping{{HostPort: 18080, ContainerPort: 80, Protocol: "tcp"}}}
	ctx := context.Background()
	res, err := m.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IPs) != 1 || !strings.HasPrefix(res.IPs[0].String(), "10.231.7.") {
		t.Fatalf("pod addresses = %v", res.IPs)
	}
	if err := m.Teardown(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// A second teardown, and one after the namespace is gone, succeed.
	if err := m.Teardown(ctx, pod); err != nil {
		t.Fatalf("second teardown: %v", err)
	}
	if err := podns.Release(nsDir); err != nil {
		t.Fatal(err)
	}
	if err := m.Teardown(ctx, pod); err != nil {
		t.Fatalf("teardown without a namespace: %v", err)
	}
	// The address went back to the pool.
	ents, _ := os.ReadDir(filepath.Join(tmp, "ipam", "podnet-test"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "10.231.7.") {
			t.Errorf("address %s still allocated after teardown", e.Name())
		}
	}
}

func TestBadConfiguration(t *testing.T) {
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "10-bad.conflist"), []byte(`{"name": `), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{ConfDir: tmp, BinDirs: []string{tmp}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Status(); err == nil || !strings.Contains(err.Error(), "10-bad.conflist") {
		t.Fatalf("Status with a malformed configuration = %v", err)
	}
	if _, err := m.Setup(context.Background(), Pod{ID: "x"}); err == nil {
		t.Fatal("Setup with a malformed configuration succeeded")
	}
}
