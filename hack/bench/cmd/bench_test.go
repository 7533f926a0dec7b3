package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/internal/testenv"
)

func TestSummarise(t *testing.T) {
	s := summarise([]float64{5, 1, 3, 2, 4})
	if s.Min != 1 || s.Median != 3 || s.P95 != 5 || s.N != 5 {
		t.Fatalf("got %+v", s)
	}
	s = summarise([]float64{4, 1, 3, 2})
	if s.Median != 2.5 || s.P95 != 4 {
		t.Fatalf("even count: got %+v", s)
	}
	var v []float64
	for i := 1; i <= 100; i++ {
		v = append(v, float64(i))
	}
	if s := summarise(v); s.P95 != 95 {
		t.Fatalf("p95 of 1..100 = %v, want 95", s.P95)
	}
	if !math.IsNaN(ratio(1, 0)) || ratio(1, 4) != 0.25 {
		t.Fatal("ratio")
	}
}

func TestResultsRatio(t *testing.T) {
	rs := newResults()
	rs.define("x", "x", "ms", "lower", "")
	for _, v := range []float64{10, 20, 30} {
		rs.add("x", "ours", v)
		rs.add("x", "docker", 2*v)
	}
	rs.fail("x", "podman", io.EOF)
	out := rs.finish([]string{"ours", "docker", "podman"})
	if got := out[0].Ratio["docker"]; got != 0.5 {
		t.Fatalf("ratio to docker = %v", got)
	}
	if _, ok := out[0].Ratio["podman"]; ok {
		t.Fatal("ratio to a failed peer")
	}
	md := (&Report{Results: out, Engines: map[string]string{}}).markdown([]string{"ours", "docker", "podman"})
	if !strings.Contains(md, "| 20.0 (10.0–30.0) [3] | 40.0 (20.0–60.0) [3] | n/a [1] | 0.50 | – |") {
		t.Fatalf("table row missing:\n%s", md)
	}
	if _, err := json.Marshal(out); err != nil {
		t.Fatal(err)
	}
}

func TestSplitRule(t *testing.T) {
	got := splitRule(`-A NETAVARK_FORWARD -d 10.214.0.0/24 -m comment --comment "netavark firewall \"x\"" -j ACCEPT`)
	want := []string{"-A", "NETAVARK_FORWARD", "-d", "10.214.0.0/24", "-m", "comment", "--comment", `netavark firewall "x"`, "-j", "ACCEPT"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestIptUndo(t *testing.T) {
	before := "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:MINE - [0:0]\n-A FORWARD -j MINE\nCOMMIT\n"
	after := "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:MINE - [0:0]\n:NETAVARK_FORWARD - [0:0]\n:OTHER - [0:0]\n" +
		"-A FORWARD -j MINE\n-A FORWARD -m comment --comment \"netavark firewall plugin rules\" -j NETAVARK_FORWARD\n" +
		"-A NETAVARK_FORWARD -d 10.214.0.0/24 -j ACCEPT\n-A OTHER -j ACCEPT\nCOMMIT\n"
	got := iptUndo(before, after)
	want := [][]string{
		{"-t", "filter", "-D", "FORWARD", "-m", "comment", "--comment", "netavark firewall plugin rules", "-j", "NETAVARK_FORWARD"},
		{"-t", "filter", "-D", "NETAVARK_FORWARD", "-d", "10.214.0.0/24", "-j", "ACCEPT"},
		{"-t", "filter", "-F", "NETAVARK_FORWARD"},
		{"-t", "filter", "-X", "NETAVARK_FORWARD"},
		{"-t", "filter", "-P", "FORWARD", "ACCEPT"},
	}
	// OTHER is someone else's (no marker): left alone.
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/a\040b\134c`); got != `/a b\c` {
		t.Fatalf("got %q", got)
	}
}

// The load image must be a valid `docker save` archive whose diff IDs are
// the layers' digests and whose content does not compress.
func TestMakeBigImage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img.tar")
	size, err := makeBigImage(path, bigImageRef, 2, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size < 2<<20 {
		t.Fatalf("size %d", size)
	}
	files := testenv.TarFiles(t, path)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || manifest[0].RepoTags[0] != bigImageRef || len(manifest[0].Layers) != 2 {
		t.Fatalf("manifest %+v", manifest)
	}
	var cfg struct {
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[manifest[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	var payloads [][]byte
	for i, l := range manifest[0].Layers {
		sum := sha256.Sum256(files[l])
		if cfg.RootFS.DiffIDs[i] != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("layer %d diff id mismatch", i)
		}
		lr := tar.NewReader(strings.NewReader(string(files[l])))
		if _, err := lr.Next(); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(lr)
		payloads = append(payloads, b)
	}
	if string(payloads[0]) == string(payloads[1]) {
		t.Fatal("layers share content; an engine could dedup them")
	}
	zeros := 0
	for _, c := range payloads[0] {
		if c == 0 {
			zeros++
		}
	}
	if zeros > len(payloads[0])/100 {
		t.Fatalf("%d zero bytes of %d: not random", zeros, len(payloads[0]))
	}
}

// The memory figures read real /proc entries: this process must show up
// with a non-zero RSS and PSS.
func TestProcMemory(t *testing.T) {
	self := os.Getpid()
	found := false
	for _, p := range listProcs() {
		if p.pid == self {
			found = p.ppid == os.Getppid() && len(p.argv) > 0
		}
	}
	if !found {
		t.Fatal("own process not listed correctly")
	}
	if rssKiB(self) <= 0 || pssKiB(self) <= 0 {
		t.Fatalf("rss %d pss %d", rssKiB(self), pssKiB(self))
	}
	if rssKiB(1<<30) != 0 {
		t.Fatal("rss of a missing pid")
	}
}

func TestParsePhases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	log := `time=x level=DEBUG msg="container created by the exec driver" id=a took=10ms
time=x level=DEBUG msg="container created by the exec driver" id=b took=30ms
time=x level=DEBUG msg=pulled took=1.5s
time=x level=INFO msg="no timing"
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	p := parsePhases(path)
	if s := p["container created by the exec driver"]; s.N != 2 || s.Median != 20 {
		t.Fatalf("got %+v", p)
	}
	if s := p["pulled"]; s.N != 1 || s.Median != float64(1500*time.Millisecond/time.Millisecond) {
		t.Fatalf("got %+v", p)
	}
}

func TestStatTicks(t *testing.T) {
	// comm with spaces and a parenthesis; utime..cstime = 7, 3, 20, 10.
	stat := "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 100 1000 10"
	if got := statTicks(stat); got != 40 {
		t.Fatalf("got %d, want 40", got)
	}
	if got := statTicks("garbage"); got != 0 {
		t.Fatalf("got %d", got)
	}
}

// The build figure's Dockerfile is fixed at ten instructions, FROM the
// bench's own busybox (no registry is asked).
func TestBuildDockerfile(t *testing.T) {
	b, err := os.ReadFile("../build/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if n := buildInstructions(string(b)); n != 10 {
		t.Fatalf("%d instructions, want 10", n)
	}
	if !strings.Contains(string(b), "\nFROM busybox\n") {
		t.Fatal("not FROM busybox")
	}
	a := buildArgs(&options{repo: "/r"}, true)
	if a[len(a)-1] != "/r/hack/bench/build" || !strings.Contains(strings.Join(a, " "), "--no-cache") {
		t.Fatalf("args %q", a)
	}
}

func TestPodmanConfigs(t *testing.T) {
	rc := podmanRegistries([]string{"127.0.0.1:5001"})
	if !strings.Contains(rc, "location = \"127.0.0.1:5001\"\ninsecure = true") {
		t.Fatalf("registries.conf:\n%s", rc)
	}
	dir := t.TempDir()
	if err := writePodmanNetwork(dir, userNetwork, "sdbench-pu", "10.218.0.0/24", "10.218.0.1", true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, userNetwork+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var n map[string]any
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	if n["network_interface"] != "sdbench-pu" || n["dns_enabled"] != true {
		t.Fatalf("network %v", n)
	}
}

// Every bridge the bench uses is its own: none is docker0 or podman0, and
// no two engines share a bridge or a subnet.
func TestBenchBridgesDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range benchBridges() {
		if b == "docker0" || b == "podman0" || seen[b] || len(b) > 15 {
			t.Fatalf("bridge %q", b)
		}
		seen[b] = true
	}
	subnets := map[string]bool{oursBridgeIP[:9]: true, dockerBridgeIP[:9]: true, podmanSubnet[:9]: true}
	for _, n := range userNets {
		if subnets[n.subnet[:9]] {
			t.Fatalf("subnet %s used twice", n.subnet)
		}
		subnets[n.subnet[:9]] = true
		if !marked(n.subnet) {
			t.Fatalf("subnet %s not among the iptables markers", n.subnet)
		}
	}
}

func TestRegistryConfig(t *testing.T) {
	r, err := newRegistry("push", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Addr, "127.0.0.1:") || !strings.Contains(r.config(), "addr: "+r.Addr+"\n") {
		t.Fatalf("config:\n%s", r.config())
	}
}

// Images made with other seed bases share no layer (the pull image must
// not be found among the push image's layers).
func TestBigImageSeeds(t *testing.T) {
	dir := t.TempDir()
	a, err := writeLayer(filepath.Join(dir, "a"), 0, 100, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := writeLayer(filepath.Join(dir, "b"), 0, 200, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("same layer from two seeds")
	}
}

func TestCPUTicks(t *testing.T) {
	busy, total, err := cpuTicks()
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || busy > total {
		t.Fatalf("busy %d of total %d", busy, total)
	}
}

func TestSelectEngines(t *testing.T) {
	o := &options{engines: "ours,podman"}
	es, err := selectEngines(o)
	if err != nil || len(es) != 2 || es[0].Name != "ours" || es[1].Name != "podman" {
		t.Fatalf("ours,podman: %v %v", es, err)
	}
	for _, bad := range []string{"docker,ours", "ours,dokcer", ""} {
		if _, err := selectEngines(&options{engines: bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestSummariseP90(t *testing.T) {
	var v []float64
	for i := 20; i >= 1; i-- {
		v = append(v, float64(i))
	}
	if s := summarise(v); s.P90 != 18 || s.Max != 20 {
		t.Fatalf("p90/max of 1..20 = %v/%v, want 18/20", s.P90, s.Max)
	}
}

func TestPodConfigs(t *testing.T) {
	if podNets["ours"].bridge == podNets["containerd"].bridge || podNets["ours"].subnet == podNets["containerd"].subnet {
		t.Fatal("the engines' pod networks must differ")
	}
	for _, b := range benchBridges() {
		for _, n := range podNets {
			if n.bridge == b {
				t.Fatalf("pod bridge %s clashes with another figure's", b)
			}
		}
	}
	var conf map[string]any
	if err := json.Unmarshal([]byte(podConflist("b0", "10.9.0.0/24", "/x/ipam")), &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf["plugins"].([]any)) != 3 {
		t.Fatalf("conflist: %v", conf)
	}
	o := &options{base: "/var/tmp/b", run: "/run/b", ctr: "ctr", containerd: "containerd"}
	e := newContainerd(o)
	cfg := containerdConfig(e, "/cni/bin")
	for _, want := range []string{`root = "/var/tmp/b/containerd/root"`, `state = "/run/b/containerd/state"`, `address = "/run/b/containerd/containerd.sock"`,
		`sandbox_image = "` + pauseImageRef + `"`, `SystemdCgroup = false`, `conf_dir = "/var/tmp/b/containerd/net.d"`, `bin_dir = "/cni/bin"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("containerd config lacks %s:\n%s", want, cfg)
		}
	}
	for _, host := range []string{"/var/lib/containerd", "/etc/containerd", "/run/containerd"} {
		if strings.Contains(cfg, host) {
			t.Errorf("containerd config names the host's %s", host)
		}
	}
}

func TestWriteImageArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pause")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := makePauseImage(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	files := testenv.TarFiles(t, img)
	var m []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil || len(m) != 1 || m[0].RepoTags[0] != pauseImageRef {
		t.Fatalf("manifest: %s %v", files["manifest.json"], err)
	}
	var cfg struct {
		Config struct{ Entrypoint []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[m[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(files[m[0].Layers[0]])
	if cfg.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) || cfg.Config.Entrypoint[0] != "/pause" {
		t.Fatalf("config %+v, layer sum %x", cfg, sum)
	}
	lr := tar.NewReader(bytes.NewReader(files[m[0].Layers[0]]))
	h, err := lr.Next()
	if err != nil || h.Name != "pause" || h.Mode&0o111 == 0 {
		t.Fatalf("pause layer: %+v %v", h, err)
	}
}
