package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Names of the host objects the benchmark itself creates for the peers'
// default networks; private, so nothing clashes with docker0/podman0 that
// another daemon on this host may own.
const (
	dockerBridge   = "sdbench-d0"
	dockerBridgeIP = "10.213.0.1/24"
	podmanNetwork  = "sdbench-net"
	podmanBridge   = "sdbench-p0"
	podmanSubnet   = "10.214.0.0/24"
	podmanGateway  = "10.214.0.1"
	oursBridge     = "sdbench-o0"
	oursBridgeIP   = "10.215.0.1/24"
)

// userNets are the user-defined networks (userNetwork) of the network
// figure: a bridge name and subnet per engine, never docker0 or podman0.
var userNets = map[string]struct{ bridge, subnet, gateway string }{
	"ours":   {"sdbench-ou", "10.216.0.0/24", "10.216.0.1"},
	"docker": {"sdbench-du", "10.217.0.0/24", "10.217.0.1"},
	"podman": {"sdbench-pu", "10.218.0.0/24", "10.218.0.1"},
}

// benchBridges are every bridge the bench or an engine makes for it; the
// clean-up deletes whichever is left.
func benchBridges() []string {
	out := []string{oursBridge, dockerBridge, podmanBridge}
	for _, n := range userNets {
		out = append(out, n.bridge)
	}
	return out
}

// newOurs is our engine: bin/dockerd on a private socket and data root,
// with -D so the exec driver's phase timings land in its log. Its default
// bridge is one of its own (sdbench-o0, which it makes and removes), set
// up as Docker's is here: no NAT table, ip_forward left alone.
func newOurs(o *options) *Engine {
	e := &Engine{
		Name:       "ours",
		CLI:        filepath.Join(o.oursBin, "docker"),
		BaseDir:    filepath.Join(o.base, "ours"),
		RunDir:     filepath.Join(o.run, "ours"),
		DefaultNet: []string{"--network", "bridge"},
	}
	e.Socket = filepath.Join(e.RunDir, "api.sock")
	e.Globals = []string{"-H", "unix://" + e.Socket}
	e.daemonArgv = []string{filepath.Join(o.oursBin, "dockerd"),
		"--config-file", filepath.Join(e.BaseDir, "daemon.json"),
		"--data-root", filepath.Join(e.BaseDir, "data"),
		"--exec-root", filepath.Join(e.RunDir, "exec"),
		"--pidfile", filepath.Join(e.RunDir, "dockerd.pid"),
		"-H", "unix://" + e.Socket,
		"--bridge=" + oursBridge, "--bip=" + oursBridgeIP, "--iptables=false", "--ip-forward=false",
	}
	if o.debug {
		e.daemonArgv = append(e.daemonArgv, "-D")
	}
	return e
}

// newDocker is Debian's Docker Engine 20.10 with its own managed
// containerd. Its default network is a bridge we create (sdbench-d0) and
// it may not touch iptables or ip_forward, so the host is left as found.
func newDocker(o *options) *Engine {
	e := &Engine{
		Name:       "docker",
		CLI:        o.dockerCLI,
		BaseDir:    filepath.Join(o.base, "docker"),
		RunDir:     filepath.Join(o.run, "docker"),
		DefaultNet: []string{"--network", "bridge"},
		// Its classic builder, as the build figure wants (20.10's CLI
		// uses it by default; this says so whatever the host's config).
		Env: []string{"DOCKER_BUILDKIT=0"},
	}
	e.Socket = filepath.Join(e.RunDir, "api.sock")
	e.Globals = []string{"-H", "unix://" + e.Socket}
	e.daemonArgv = []string{o.dockerd,
		"--config-file", filepath.Join(e.BaseDir, "daemon.json"),
		"--data-root", filepath.Join(e.BaseDir, "data"),
		"--exec-root", filepath.Join(e.RunDir, "exec"),
		"--pidfile", filepath.Join(e.RunDir, "dockerd.pid"),
		"-H", "unix://" + e.Socket,
		"--bridge=" + dockerBridge, "--iptables=false", "--ip-forward=false", "--ip-masq=false",
	}
	return e
}

// newPodman is Podman 4.3 as root with private storage and runtime dirs;
// its CLI needs no daemon, its Docker-compatible API is `system service`.
func newPodman(o *options) *Engine {
	e := &Engine{
		Name:       "podman",
		CLI:        o.podman,
		BaseDir:    filepath.Join(o.base, "podman"),
		RunDir:     filepath.Join(o.run, "podman"),
		DefaultNet: []string{"--network", podmanNetwork},
	}
	e.Socket = filepath.Join(e.RunDir, "api.sock")
	e.Env = []string{
		"CONTAINERS_CONF=" + filepath.Join(e.BaseDir, "containers.conf"),
		"CONTAINERS_REGISTRIES_CONF=" + filepath.Join(e.BaseDir, "registries.conf"),
	}
	e.Globals = []string{
		"--root", filepath.Join(e.BaseDir, "root"),
		"--runroot", filepath.Join(e.RunDir, "runroot"),
		"--tmpdir", filepath.Join(e.RunDir, "tmp"),
		"--storage-driver", "overlay",
		"--cgroup-manager", "cgroupfs",
		"--events-backend", "file",
	}
	e.daemonArgv = append(append([]string{o.podman}, e.Globals...), "system", "service", "--time=0", "unix://"+e.Socket)
	return e
}

// writeConfigs writes each engine's private configuration before start;
// insecure are the bench's loopback registries (plain HTTP).
func writeConfigs(es []*Engine, insecure []string) error {
	for _, e := range es {
		if err := os.MkdirAll(e.BaseDir, 0o700); err != nil {
			return err
		}
		var name, body string
		switch e.Name {
		case "ours", "docker":
			// An explicit daemon.json, so /etc/docker/daemon.json (if
			// any) does not leak into the measurement.
			b, err := json.Marshal(map[string]any{"insecure-registries": insecure})
			if err != nil {
				return err
			}
			name, body = "daemon.json", string(b)+"\n"
		case "podman":
			// The ulimits this host can grant (hard nofile is 20000 here),
			// a file log driver (journald is not running), and networks
			// kept in a private directory.
			name = "containers.conf"
			body = fmt.Sprintf(`[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
log_driver = "k8s-file"
init_path = "/usr/bin/tini-static"

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"

[network]
network_backend = "netavark"
network_config_dir = %q
`, filepath.Join(e.BaseDir, "networks"))
		}
		if err := os.WriteFile(filepath.Join(e.BaseDir, name), []byte(body), 0o600); err != nil {
			return err
		}
		if e.Name == "podman" {
			if err := os.WriteFile(filepath.Join(e.BaseDir, "registries.conf"), []byte(podmanRegistries(insecure)), 0o600); err != nil {
				return err
			}
			dir := filepath.Join(e.BaseDir, "networks")
			if err := writePodmanNetwork(dir, podmanNetwork, podmanBridge, podmanSubnet, podmanGateway, false); err != nil {
				return err
			}
			un := userNets["podman"]
			if err := writePodmanNetwork(dir, userNetwork, un.bridge, un.subnet, un.gateway, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// podmanRegistries is Podman's private registries.conf: Docker Hub for
// short names (the bench's images are local, nothing is fetched) and the
// loopback registries as insecure (plain HTTP).
func podmanRegistries(insecure []string) string {
	var b strings.Builder
	b.WriteString("unqualified-search-registries = [\"docker.io\"]\nshort-name-mode = \"permissive\"\n")
	for _, r := range insecure {
		fmt.Fprintf(&b, "\n[[registry]]\nlocation = %q\ninsecure = true\n", r)
	}
	return b.String()
}

// writePodmanNetwork defines a Podman bridge network in netavark's own
// file format: Podman 4.3's `network create` cannot name the bridge, and
// its default "podman0" could clash with another Podman on this host.
// dns turns on its name server (aardvark-dns), as a user-defined network
// of Docker's has its embedded DNS.
func writePodmanNetwork(dir, name, bridge, subnet, gateway string, dns bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	id := sha256.Sum256([]byte(name))
	net := map[string]any{
		"name":              name,
		"id":                hex.EncodeToString(id[:]),
		"driver":            "bridge",
		"network_interface": bridge,
		"created":           time.Now().UTC().Format(time.RFC3339Nano),
		"subnets":           []map[string]string{{"subnet": subnet, "gateway": gateway}},
		"ipv6_enabled":      false,
		"internal":          false,
		"dns_enabled":       dns,
		"ipam_options":      map[string]string{"driver": "host-local"},
	}
	b, err := json.MarshalIndent(net, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".json"), b, 0o600)
}
