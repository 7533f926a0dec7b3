package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The podstart figure (issue 22): RunPodSandbox + CreateContainer +
// StartContainer of a one-container pod on the pod network, and apart
// from it StopPodSandbox + RemovePodSandbox, over CRI v1: our dockerd's
// CRI beside containerd's. Each engine runs alone (never both at once), in
// a network and mount namespace of the bench's own (see enterPodNS).

const (
	pauseImageRef   = "sdbench.local/pause:1"
	podBusyboxRef   = "docker.io/library/busybox:latest"
	podCgroupParent = "sdbench-podstart" // below every hierarchy's root
	podNSEnv        = "SDBENCH_PODSTART_NS"
	maxPodSamples   = 200
)

// podNets are each engine's CNI network: same plugins, same shape, a
// bridge and subnet of its own.
var podNets = map[string]struct{ bridge, subnet string }{
	"ours":       {"sdbench-po", "10.219.0.0/24"},
	"containerd": {"sdbench-pc", "10.220.0.0/24"},
}

// enterPodNS re-runs the bench inside new network and mount namespaces
// (unshare(1); not `ip netns exec`, which remounts /sys and hides the
// cgroup hierarchies). In there, a tmpfs on /run makes the paths that
// containerd 1.6 hard-codes (/run/containerd/s for shim sockets, runc's
// state, /run/netns for pods' namespaces) private, and the namespaces die
// with the bench's last process. It returns false when already inside.
func enterPodNS() (bool, error) {
	if os.Getenv(podNSEnv) != "" {
		return false, nil
	}
	self, err := os.Executable()
	if err != nil {
		return false, err
	}
	argv := append([]string{"--net", "--mount", "--propagation", "private", "--", self}, os.Args[1:]...)
	c := exec.Command("unshare", argv...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The outer namespaces, for the inner bench to check it left them
	// (PID 1's may be unreadable, as in a sandbox).
	net, err1 := os.Readlink("/proc/self/ns/net")
	mnt, err2 := os.Readlink("/proc/self/ns/mnt")
	if err1 != nil || err2 != nil {
		return false, fmt.Errorf("read own namespaces: %v %v", err1, err2)
	}
	c.Env = append(os.Environ(), podNSEnv+"="+net+","+mnt)
	if err := c.Run(); err != nil {
		return true, fmt.Errorf("podstart in private namespaces: %w", err)
	}
	return true, nil
}

// privatizeNS checks that the bench runs in namespaces of its own and
// sets them up: loopback up, /run private, libcni's cache dir (containerd
// uses the default, /var/lib/cni) private when the host has one.
func privatizeNS(base string) error {
	outer := strings.Split(os.Getenv(podNSEnv), ",")
	for i, ns := range []string{"net", "mnt"} {
		self, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil || len(outer) != 2 || self == outer[i] {
			return fmt.Errorf("podstart must run in a %s namespace of its own (got %s, outer %v)", ns, self, outer)
		}
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("loopback up: %w: %s", err, out)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("private /run: %w", err)
	}
	if st, err := os.Stat("/var/lib/cni"); err == nil && st.IsDir() {
		priv := filepath.Join(base, "var-lib-cni")
		if err := os.MkdirAll(priv, 0o700); err != nil {
			return err
		}
		if err := unix.Mount(priv, "/var/lib/cni", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("private /var/lib/cni: %w", err)
		}
	}
	return nil
}

// podEngine is one CRI runtime under test.
type podEngine struct {
	*Engine
	criSock string
	netDir  string
	cri     *criClient
}

func podEngines(o *options) ([]*podEngine, error) {
	names := o.engines
	if names == defaultEngines {
		names = "ours,containerd"
	}
	var out []*podEngine
	for _, n := range strings.Split(names, ",") {
		switch strings.TrimSpace(n) {
		case "ours":
			e := newOurs(o)
			pe := &podEngine{Engine: e, criSock: filepath.Join(e.RunDir, "cri.sock"), netDir: filepath.Join(e.BaseDir, "net.d")}
			e.daemonArgv = append(e.daemonArgv, "--cri-socket", pe.criSock, "--cni-conf-dir", pe.netDir, "--cni-bin-dir", o.cniBin)
			out = append(out, pe)
		case "containerd":
			out = append(out, newContainerd(o))
		default:
			return nil, fmt.Errorf("-engines: podstart knows ours and containerd, got %q", n)
		}
	}
	if len(out) == 0 || out[0].Name != "ours" {
		return nil, fmt.Errorf("-engines: ours must come first, got %q", names)
	}
	for _, e := range out {
		e.settle = o.settle
	}
	return out, nil
}

// newContainerd is Debian's containerd with its built-in CRI plugin, on a
// private config, root, state and socket; runc through the runc v2 shim,
// overlayfs, cgroupfs as ours uses here, the sandbox image the bench
// imports (nothing is pulled).
func newContainerd(o *options) *podEngine {
	e := &Engine{
		Name:    "containerd",
		CLI:     o.ctr,
		BaseDir: filepath.Join(o.base, "containerd"),
		RunDir:  filepath.Join(o.run, "containerd"),
	}
	e.Socket = filepath.Join(e.RunDir, "containerd.sock")
	e.Globals = []string{"-a", e.Socket, "-n", "k8s.io"}
	e.daemonArgv = []string{o.containerd, "--config", filepath.Join(e.BaseDir, "config.toml")}
	return &podEngine{Engine: e, criSock: e.Socket, netDir: filepath.Join(e.BaseDir, "net.d")}
}

func containerdConfig(e *podEngine, cniBin string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # This host refuses a lower oom_score_adj than the daemon's own (the
  # pause container's -998 fails in runc's nsexec); clamp it, as ours
  # never lowers it either.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`, filepath.Join(e.BaseDir, "root"), filepath.Join(e.RunDir, "state"), e.Socket, filepath.Join(e.RunDir, "ttrpc.sock"),
		filepath.Join(e.BaseDir, "opt"), pauseImageRef, cniBin, e.netDir)
}

// podConflist is the pod network: bridge + host-local + loopback as a
// kubelet node's plain CNI setup has, no masquerade (nothing leaves the
// namespace), host-local's leases in the engine's private dir.
func podConflist(bridge, subnet, ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "sdbench-pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{ "subnet": %q }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "backend": "nftables", "capabilities": { "portMappings": true } },
    { "type": "loopback" }
  ]
}
`, bridge, ipamDir, subnet)
}

// writePodConfigs writes an engine's private configuration files.
func writePodConfigs(e *podEngine, o *options) error {
	for _, d := range []string{e.BaseDir, e.RunDir, e.netDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	n := podNets[e.Name]
	if err := os.WriteFile(filepath.Join(e.netDir, "10-sdbench.conflist"), []byte(podConflist(n.bridge, n.subnet, filepath.Join(e.BaseDir, "cni-ipam"))), 0o600); err != nil {
		return err
	}
	switch e.Name {
	case "ours":
		return os.WriteFile(filepath.Join(e.BaseDir, "daemon.json"), []byte("{}\n"), 0o600)
	case "containerd":
		return os.WriteFile(filepath.Join(e.BaseDir, "config.toml"), []byte(containerdConfig(e, o.cniBin)), 0o600)
	}
	return nil
}

// importImages gives the engine the busybox rootfs (both engines, the
// same name and content) and, for containerd, the sandbox image.
func importImages(ctx context.Context, e *podEngine, o *options) error {
	switch e.Name {
	case "ours":
		_, err := e.run(ctx, "import", "-c", `CMD ["sh"]`, o.busyboxTar, podBusyboxRef)
		return err
	case "containerd":
		bb := filepath.Join(e.BaseDir, "busybox-image.tar")
		if err := writeImageArchive(bb, podBusyboxRef, o.busyboxTar, nil, []string{"sh"}); err != nil {
			return err
		}
		pause, err := makePauseImage(e.BaseDir, o.pauseBin)
		if err != nil {
			return err
		}
		for _, img := range []string{bb, pause} {
			if _, err := e.run(ctx, "images", "import", img); err != nil {
				return err
			}
			_ = os.Remove(img)
		}
	}
	return nil
}

// podSample is one measured pod.
type podSample struct {
	Start    float64 `json:"start_ms"`
	Teardown float64 `json:"teardown_ms"`
	Run      float64 `json:"run_pod_sandbox_ms"`
	Create   float64 `json:"create_container_ms"`
	StartC   float64 `json:"start_container_ms"`
	Stop     float64 `json:"stop_pod_sandbox_ms"`
	Remove   float64 `json:"remove_pod_sandbox_ms"`
}

// podCycle makes, checks and tears down one pod; the start (three calls)
// and the teardown (two) are timed apart, each after the settle.
func podCycle(ctx context.Context, e *podEngine, p *podSpec) (podSample, error) {
	var t callTimes
	if err := p.prepare(); err != nil {
		return podSample{}, err
	}
	t0 := sampleStart(e.Engine)
	id, err := e.cri.startPod(ctx, p, &t)
	start := ms(time.Since(t0))
	if err != nil {
		if id != "" {
			_ = e.cri.teardownPod(ctx, id, &t)
		}
		return podSample{}, err
	}
	if err := e.cri.containerRunning(ctx, id); err != nil {
		_ = e.cri.teardownPod(ctx, id, &t)
		return podSample{}, err
	}
	t1 := sampleStart(e.Engine)
	if err := e.cri.teardownPod(ctx, id, &t); err != nil {
		return podSample{}, err
	}
	td := ms(time.Since(t1))
	_ = os.RemoveAll(p.logDir)
	_ = os.RemoveAll(p.podDir)
	return podSample{Start: start, Teardown: td, Run: t.run, Create: t.create, StartC: t.start, Stop: t.stop, Remove: t.remove}, nil
}

// podRun is one engine's whole measurement.
type podRun struct {
	Engine  string           `json:"engine"`
	Version string           `json:"version"`
	Warmup  int              `json:"warmup"`
	Samples []podSample      `json:"samples"`
	Phases  map[string]Stats `json:"our_debug_phases_ms,omitempty"`
	Error   string           `json:"error,omitempty"`
}

// measurePods starts the engine alone, measures warm-up + samples pods,
// and stops it again, leaving nothing of it running.
func measurePods(ctx context.Context, o *options, e *podEngine) (run *podRun, err error) {
	run = &podRun{Engine: e.Name, Warmup: o.warmup}
	if err := writePodConfigs(e, o); err != nil {
		return run, err
	}
	if e.Name == "containerd" {
		// No Docker API: it is up once its CRI answers.
		e.ready = func(ctx context.Context) error {
			c, err := dialCRI(e.criSock)
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.rt.Version(ctx, &runtimeapi.VersionRequest{})
			return err
		}
	}
	defer stopPodEngine(e)
	if err := e.start(ctx); err != nil {
		return run, err
	}
	if e.cri, err = dialCRI(e.criSock); err != nil {
		return run, err
	}
	if err := importImages(ctx, e, o); err != nil {
		return run, err
	}
	if err := waitFor(ctx, 60*time.Second, e.cri.ready); err != nil {
		return run, fmt.Errorf("%s CRI not ready: %w", e.Name, err)
	}
	run.Version = e.cri.version(ctx)
	img, err := e.cri.imageID(ctx, podBusyboxRef)
	if err != nil {
		return run, err
	}
	logRoot := filepath.Join(e.BaseDir, "pods-logs")
	volRoot := filepath.Join(e.BaseDir, "pods")
	stamp := time.Now().Unix()
	for i := 0; i < o.warmup+o.samples && ctx.Err() == nil; i++ {
		name := fmt.Sprintf("podstart-%d", i)
		uid := fmt.Sprintf("%s-%d-%04d", e.Name, stamp, i)
		p := &podSpec{
			name: name, uid: uid, image: img, imageRef: "busybox",
			logDir:       filepath.Join(logRoot, "sdbench_"+name+"_"+uid),
			podDir:       filepath.Join(volRoot, uid),
			cgroupParent: "/" + podCgroupParent + "/pod" + uid,
		}
		s, err := podCycle(ctx, e, p)
		if err != nil {
			return run, fmt.Errorf("pod %d: %w", i, err)
		}
		slog.Info("pod", "engine", e.Name, "i", i, "warmup", i < o.warmup, "start_ms", s.Start, "teardown_ms", s.Teardown,
			"run", s.Run, "create", s.Create, "startc", s.StartC, "stop", s.Stop, "remove", s.Remove)
		if i >= o.warmup {
			run.Samples = append(run.Samples, s)
		}
	}
	if e.Name == "ours" && o.debug {
		run.Phases = parsePhases(e.logPath)
	}
	return run, ctx.Err()
}

func waitFor(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	deadline := time.Now().Add(d)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(cctx)
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopPodEngine removes the engine's pods, stops it by PID, and ends
// whatever it left: its shims, then any process still in the bench's
// cgroups (each a pod's process the engine started), by PID. Mounts under
// its private dirs are unmounted.
func stopPodEngine(e *podEngine) {
	if e.cri != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := e.cri.removeAllPods(ctx); err != nil {
			slog.Warn("remove pods", "engine", e.Name, "err", err)
		}
		cancel()
		_ = e.cri.Close()
		e.cri = nil
	}
	if e.Name == "ours" && e.daemon != nil {
		// Our plain containers (none are made, but be sure).
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if ids, err := e.run(ctx, "ps", "-aq"); err == nil && ids != "" {
			_ = e.forceRemove(ctx, strings.Fields(ids)...)
		}
		cancel()
	}
	e.stop()
	// Keep the daemon's log (outside the tree) for the timings in detail.
	if b, err := os.ReadFile(e.logPath); err == nil {
		keep := "/var/tmp/sdbench-podstart-" + e.Name + ".log"
		_ = os.WriteFile(keep, b, 0o644)
		slog.Info("daemon log kept", "engine", e.Name, "path", keep)
	}
	for _, pid := range e.helperPIDs() {
		slog.Warn("helper left behind, killing", "engine", e.Name, "pid", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range podCgroupPIDs() {
		slog.Warn("pod process left behind, killing", "engine", e.Name, "pid", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(200 * time.Millisecond)
	unmountUnder([]string{e.BaseDir, e.RunDir})
	if out, err := exec.Command("ip", "link", "del", podNets[e.Name].bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find") {
		slog.Warn("delete bridge", "bridge", podNets[e.Name].bridge, "err", err, "out", strings.TrimSpace(string(out)))
	}
}

// podCgroupPIDs lists the processes in the bench's pod cgroups.
func podCgroupPIDs() []int {
	seen := map[int]bool{}
	var out []int
	files, _ := filepath.Glob("/sys/fs/cgroup/*/" + podCgroupParent)
	for _, root := range files {
		_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || info.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 && !seen[pid] {
					seen[pid] = true
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	return out
}

// runPodStart is the podstart figure's whole run: it replaces the other
// figures' setup (no Docker, no Podman, no registries).
func runPodStart(o *options) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root")
	}
	if o.busyboxTar == "" || o.cniBin == "" || o.pauseBin == "" {
		return fmt.Errorf("podstart needs --busybox, --cni-bin and --pause-bin (hack/bench/run gives them)")
	}
	if o.samples > maxPodSamples {
		return fmt.Errorf("--samples %d: at most %d pods", o.samples, maxPodSamples)
	}
	for _, d := range []string{o.base, o.run} {
		if _, err := os.Stat(d); err == nil {
			return fmt.Errorf("%s exists: another bench running, or a crashed one (remove it)", d)
		}
	}
	if outer, err := enterPodNS(); outer {
		return err
	}
	var err error
	if o.repo, err = filepath.Abs(o.repo); err != nil {
		return err
	}
	if o.oursBin == "" {
		o.oursBin = filepath.Join(o.repo, "bin")
	}
	es, err := podEngines(o)
	if err != nil {
		return err
	}
	// containerd puts a pod without a cgroup parent below k8s.io.
	peerCgroups = append(peerCgroups, podCgroupParent, "k8s.io")
	host := snapshotHost()
	defer host.restore([]string{o.base, o.run})
	if err := os.MkdirAll(o.base, 0o700); err != nil {
		return err
	}
	if err := privatizeNS(o.base); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigc
		slog.Warn("interrupted; cleaning up", "signal", s.String())
		cancel()
	}()

	start := time.Now()
	var runs []*podRun
	for _, e := range es {
		t0 := time.Now()
		slog.Info("measuring", "step", "podstart", "engine", e.Name)
		r, err := measurePods(ctx, o, e)
		if err != nil {
			slog.Error("podstart failed", "engine", e.Name, "err", err)
			r.Error = err.Error()
		}
		runs = append(runs, r)
		slog.Info("measured", "engine", e.Name, "took", time.Since(t0).Round(time.Millisecond))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return writePodReport(o, runs, start)
}

// podReport is the JSON file's content.
type podReport struct {
	Date    string                      `json:"date"`
	Host    map[string]string           `json:"host"`
	Settle  bool                        `json:"settle"`
	Runs    []*podRun                   `json:"runs"`
	Stats   map[string]map[string]Stats `json:"stats"` // engine -> figure -> stats
	Elapsed float64                     `json:"elapsed_s"`
}

var podFigures = []struct{ key, title string }{
	{"start", "pod start: RunPodSandbox + CreateContainer + StartContainer"},
	{"teardown", "pod teardown: StopPodSandbox + RemovePodSandbox"},
	{"run", "RunPodSandbox"},
	{"create", "CreateContainer"},
	{"startc", "StartContainer"},
	{"stop", "StopPodSandbox"},
	{"remove", "RemovePodSandbox"},
}

func (s podSample) get(key string) float64 {
	return map[string]float64{"start": s.Start, "teardown": s.Teardown, "run": s.Run, "create": s.Create,
		"startc": s.StartC, "stop": s.Stop, "remove": s.Remove}[key]
}

func writePodReport(o *options, runs []*podRun, start time.Time) error {
	now := time.Now()
	rep := &podReport{Date: now.Format("2006-01-02 15:04"), Host: hostInfo(), Settle: o.settle, Runs: runs, Stats: map[string]map[string]Stats{}}
	for _, r := range runs {
		rep.Stats[r.Engine] = map[string]Stats{}
		for _, f := range podFigures {
			var v []float64
			for _, s := range r.Samples {
				v = append(v, s.get(f.key))
			}
			rep.Stats[r.Engine][f.key] = summarise(v)
		}
	}
	rep.Elapsed = time.Since(start).Seconds()
	md := rep.markdown(o)
	fmt.Println(md)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	stem := filepath.Join(o.out, now.Format("2006-01-02-1504")+"-podstart")
	if err := os.WriteFile(stem+".md", []byte(md), 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(stem+".json", append(b, '\n'), 0o644); err != nil {
		return err
	}
	slog.Info("wrote", "markdown", stem+".md", "json", stem+".json")
	return nil
}

func (r *podReport) markdown(o *options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Pod start over CRI %s\n\n", r.Date)
	for _, k := range []string{"cpus", "kernel", "memory"} {
		fmt.Fprintf(&b, "- %s: %s\n", k, r.Host[k])
	}
	var names []string
	for _, run := range r.Runs {
		names = append(names, run.Engine)
		fmt.Fprintf(&b, "- %s: %s\n", run.Engine, run.Version)
	}
	fmt.Fprintf(&b, "- each engine alone (started, measured, stopped, in this order: %s), in a private network namespace; "+
		"%d pods each after %d warm-up pods; one busybox container `sleep 3600` per pod, pod network by CNI bridge + host-local + loopback (+ portmap, no ports)",
		strings.Join(names, ", "), o.samples, o.warmup)
	if r.Settle {
		b.WriteString("; each timed phase starts once the host has been quiet for 100 ms (at most 3 s)")
	}
	b.WriteString("\n\nCells: median / p90 (min–max) [n], ms. Ratio: ours ÷ peer on medians.\n\n| figure |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s |", n)
	}
	for _, n := range names[1:] {
		fmt.Fprintf(&b, " ours/%s |", n)
	}
	b.WriteString("\n|---|")
	for range names {
		b.WriteString("---|")
	}
	for range names[1:] {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, f := range podFigures {
		fmt.Fprintf(&b, "| %s |", f.title)
		for _, n := range names {
			s := r.Stats[n][f.key]
			if s.N == 0 {
				b.WriteString(" n/a |")
				continue
			}
			fmt.Fprintf(&b, " %s / %s (%s–%s) [%d] |", fmtNum(s.Median), fmtNum(s.P90), fmtNum(s.Min), fmtNum(s.Max), s.N)
		}
		for _, n := range names[1:] {
			if q := ratio(r.Stats["ours"][f.key].Median, r.Stats[n][f.key].Median); q == q {
				fmt.Fprintf(&b, " %.2f |", q)
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	for _, run := range r.Runs {
		if run.Error != "" {
			fmt.Fprintf(&b, "\n%s failed: %s\n", run.Engine, oneLine(run.Error))
		}
		if len(run.Phases) > 0 {
			b.WriteString("\nOur engine's timed phases (dockerd -D log, `took=`), ms:\n\n| phase | n | min | median | p95 |\n|---|---|---|---|---|\n")
			keys := make([]string, 0, len(run.Phases))
			for k := range run.Phases {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				s := run.Phases[k]
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", k, s.N, fmtNum(s.Min), fmtNum(s.Median), fmtNum(s.P95))
			}
		}
	}
	fmt.Fprintf(&b, "\nWall time of the whole run: %.0f s\n", r.Elapsed)
	return b.String()
}
