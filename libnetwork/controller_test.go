package libnetwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"

	"github.com/sdengine/engine/internal/testenv"
	"github.com/sdengine/engine/pkg/errdefs"
)

// The tests run in a network namespace of their own (TestMain re-executes
// the binary under unshare -n), so that the bridges, their rules and
// every packet stay there.
const inNetnsVar = "SDENGINE_LIBNETWORK_TEST_NETNS"

func TestMain(m *testing.M) {
	if os.Getenv(inNetnsVar) == "" && os.Geteuid() == 0 {
		testenv.Reexec(inNetnsVar, "-n")
	}
	os.Exit(m.Run())
}

// TestJoinConnectLeave drives the controller as the daemon does, on a
// default bridge and a user-defined network of the test's own: Join with
// two networks, a published port and a legacy link, inspect, disconnect
// and connect while running, Leave, and the events of each step.
func TestJoinConnectLeave(t *testing.T) {
	testenv.RequireRoot(t)
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v %s", err, out)
	}
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []string
	)
	ctrl, err := New(Config{
		Root: filepath.Join(dir, "root"), ExecRoot: filepath.Join(dir, "exec"),
		Bridge: "sdc0", BIP: "10.78.0.1/24", IPTables: true, HostResolvConf: resolv,
		Events: func(action eventtypes.Action, id, name, cid string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, string(action)+" "+name+" "+cid[:min(len(cid), 2)])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close(true)
	ctx := context.Background()
	created, err := ctrl.Create(ctx, network.CreateRequest{Name: "front", CreateOptions: network.CreateOptions{IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: "10.79.0.0/24"}}}}})
	if err != nil {
		t.Fatal(err)
	}

	a, b := strings.Repeat("aa", 32), strings.Repeat("bb", 32)
	res, err := ctrl.Join(ctx, JoinRequest{
		ContainerID: a, Name: "/db", NetworkMode: "bridge",
		EndpointsConfig: map[string]*network.EndpointSettings{"front": {Aliases: []string{"sql"}}},
		PortBindings:    nat.PortMap{"80/tcp": {{HostIP: "127.0.0.1", HostPort: "18081"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Network == nil || res.Network.IPAddress != "10.78.0.2" || res.Network.IfName != "eth0" || len(res.Network.Ports) != 1 {
		t.Fatalf("first endpoint %+v", res.Network)
	}
	if ep := res.Networks["front"]; ep == nil || ep.IPAddress != "10.79.0.2" || ep.IfName != "eth1" || ep.NetworkID != created.ID {
		t.Fatalf("second endpoint %+v", ep)
	}
	if _, err := os.Stat(res.SandboxKey()); err != nil {
		t.Errorf("namespace: %v", err)
	}
	if !ctrl.UsesEmbeddedDNS(a) {
		t.Error("on a user-defined network without the embedded DNS")
	}
	for _, ref := range []string{"bridge", "front"} {
		nw, err := ctrl.Inspect(ctx, ref)
		if err != nil || nw.Containers[a].Name != "db" {
			t.Errorf("%s: %+v %v", ref, nw.Containers, err)
		}
	}
	if err := ctrl.Remove(ctx, "front"); errdefs.ClassOf(err) != errdefs.ClassForbidden {
		t.Errorf("remove with an endpoint: %v", err)
	}

	// A legacy link to a container on the default bridge.
	res2, err := ctrl.Join(ctx, JoinRequest{ContainerID: b, Name: "/app", NetworkMode: "bridge",
		LegacyLinks: []LinkedContainer{{Alias: "mysql", ID: a, Name: "/db", Hostname: "dbhost", Running: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res2.LinkHosts, []string{"10.78.0.2\tmysql dbhost db"}) || !slices.Contains(res2.LinkEnv, "MYSQL_NAME=/app/mysql") {
		t.Errorf("links: %q %q", res2.LinkHosts, res2.LinkEnv)
	}
	_, err = ctrl.Join(ctx, JoinRequest{ContainerID: strings.Repeat("cc", 32), Name: "/x", NetworkMode: "bridge",
		LegacyLinks: []LinkedContainer{{Alias: "gone", ID: strings.Repeat("dd", 32), Name: "/gone", Running: true}}})
	if !errdefs.IsInvalidParameter(err) {
		t.Errorf("a link to a container off the bridge: %v", err)
	}

	// Disconnect and connect while running.
	att, err := ctrl.Disconnect(ctx, a, "front")
	if err != nil || len(att.Networks) != 0 || att.Network.Network != "bridge" {
		t.Fatalf("disconnect: %+v %v", att, err)
	}
	if _, err := ctrl.Disconnect(ctx, a, "front"); errdefs.ClassOf(err) != errdefs.ClassForbidden {
		t.Errorf("second disconnect: %v", err)
	}
	cr, err := ctrl.Connect(ctx, ConnectRequest{ContainerID: a, Name: "/db", Ref: created.ID[:8], Running: true})
	if err != nil || cr.Network != "front" || cr.Attachment.Networks["front"].IfName != "eth1" {
		t.Fatalf("connect: %+v %v", cr, err)
	}
	if _, err := ctrl.Connect(ctx, ConnectRequest{ContainerID: a, Name: "/db", Ref: "front", Running: true}); errdefs.ClassOf(err) != errdefs.ClassForbidden {
		t.Errorf("second connect: %v", err)
	}

	ctrl.Leave(b, "bridge", Attachment{})
	ctrl.Leave(a, "bridge", Attachment{})
	if _, err := os.Stat(res.SandboxKey()); !os.IsNotExist(err) {
		t.Errorf("namespace left: %v", err)
	}
	if nw, _ := ctrl.Inspect(ctx, "bridge"); len(nw.Containers) != 0 {
		t.Errorf("bridge after Leave: %+v", nw.Containers)
	}
	if err := ctrl.Remove(ctx, "front"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"create front ", "connect bridge aa", "connect front aa", "connect bridge bb",
		"disconnect front aa", "connect front aa",
		"disconnect bridge bb", "disconnect bridge aa", "disconnect front aa", "destroy front ",
	}
	if !slices.Equal(events, want) {
		t.Errorf("events\n%q\nwant\n%q", events, want)
	}
}
