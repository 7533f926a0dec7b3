// Command bench measures our engine beside Docker and Podman on this host:
// each engine runs on private paths, samples are interleaved, and the
// result is a markdown table and a JSON file under hack/bench/results/.
// hack/bench/run builds the binaries and images and then runs this.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type options struct {
	quick                  bool
	repo, base, run, out   string
	oursBin                string
	busyboxTar, systemdTar string
	dockerCLI, dockerd     string
	podman                 string
	debug                  bool
	only                   string
	engines                string
	settle                 bool

	// podstart (a run of its own: ours and containerd over CRI)
	cniBin, pauseBin string
	containerd, ctr  string
	warmup           int

	samples, containers, rounds  int
	loadMB, loadRounds           int
	logMB, logRounds, bootRounds int
	regMB, regRounds             int
	buildRounds, statsRounds     int
	healthSecs, healthRounds     int

	// The loopback registries of the pull/push figure; their addresses
	// go into every engine's config, so they are chosen before start.
	regPull, regPush *registry
}

func main() {
	o := &options{}
	flag.BoolVar(&o.quick, "quick", false, "fewer samples, 20 containers, 50 MB image (about 3 minutes)")
	flag.StringVar(&o.repo, "repo", ".", "repository root")
	flag.StringVar(&o.oursBin, "ours-bin", "", "directory holding our dockerd and docker (default REPO/bin)")
	flag.StringVar(&o.base, "base", "/var/tmp/sdbench", "private persistent state of all engines (removed at the end)")
	flag.StringVar(&o.run, "rundir", "/run/sdbench", "private runtime state of all engines (removed at the end)")
	flag.StringVar(&o.out, "out", "hack/bench/results", "where the table and JSON go")
	flag.StringVar(&o.busyboxTar, "busybox", "", "busybox rootfs tar (hack/images/busybox.sh)")
	flag.StringVar(&o.systemdTar, "systemd", "", "systemd rootfs tar (hack/images/systemd.sh); empty skips the boot figure")
	flag.StringVar(&o.dockerCLI, "docker-cli", "/usr/bin/docker", "Docker's own CLI")
	flag.StringVar(&o.dockerd, "dockerd", "/usr/sbin/dockerd", "Docker Engine daemon")
	flag.StringVar(&o.podman, "podman", "/usr/bin/podman", "podman")
	flag.BoolVar(&o.debug, "debug", true, "run our dockerd with -D (phase timings in the table)")
	flag.StringVar(&o.only, "only", "", "comma-separated figures to run: run,exec,many,batch,logs,load,systemd,sdready,net,registry,build,stats,health (default all), or podstart alone")
	flag.StringVar(&o.engines, "engines", defaultEngines, "comma-separated engines to run, ours first (leaving a peer out shows what it does to the others' figures)")
	flag.BoolVar(&o.settle, "settle", true, "start each timed sample only once the host has been quiet for 100 ms (at most 3 s)")
	flag.StringVar(&o.cniBin, "cni-bin", "", "podstart: directory of the CNI plugins (bridge, host-local, loopback, portmap)")
	flag.StringVar(&o.pauseBin, "pause-bin", "", "podstart: static pause binary for containerd's sandbox image (hack/bench/pause)")
	flag.StringVar(&o.containerd, "containerd", "/usr/bin/containerd", "podstart: containerd with its CRI plugin")
	flag.StringVar(&o.ctr, "ctr", "/usr/bin/ctr", "podstart: containerd's ctr")
	flag.IntVar(&o.warmup, "warmup", 3, "podstart: unmeasured pods before the samples, per engine")
	flag.IntVar(&o.samples, "samples", 0, "samples of run/exec per engine (default 20, quick 5)")
	flag.IntVar(&o.containers, "containers", 0, "containers of the N-containers figure (default 100, quick 20)")
	flag.Parse()
	set := func(p *int, full, quick int) {
		if *p == 0 {
			*p = full
			if o.quick {
				*p = quick
			}
		}
	}
	set(&o.samples, 20, 5)
	set(&o.containers, 100, 20)
	set(&o.rounds, 2, 1)
	set(&o.loadMB, 200, 50)
	set(&o.loadRounds, 3, 2)
	set(&o.logMB, 100, 100)
	set(&o.logRounds, 3, 1)
	set(&o.bootRounds, 3, 1)
	set(&o.regMB, 100, 100)
	set(&o.regRounds, 5, 2)
	set(&o.buildRounds, 5, 2)
	set(&o.statsRounds, 5, 2)
	set(&o.healthSecs, 30, 10)
	set(&o.healthRounds, 2, 1)
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	runFn := run
	if o.want("podstart") {
		if o.only != "podstart" {
			slog.Error("podstart runs alone: --only podstart")
			os.Exit(2)
		}
		runFn = runPodStart
	}
	if err := runFn(o); err != nil {
		slog.Error("bench failed", "err", err)
		os.Exit(1)
	}
}

// defaultEngines are the engines of every figure but podstart.
const defaultEngines = "ours,docker,podman"

func (o *options) want(fig string) bool {
	if o.only == "" {
		return true
	}
	for _, f := range strings.Split(o.only, ",") {
		if f == fig {
			return true
		}
	}
	return false
}

func run(o *options) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root")
	}
	if o.busyboxTar == "" {
		return fmt.Errorf("--busybox TAR is required")
	}
	var err error
	if o.repo, err = filepath.Abs(o.repo); err != nil {
		return err
	}
	if o.oursBin == "" {
		o.oursBin = filepath.Join(o.repo, "bin")
	}
	for _, d := range []string{o.base, o.run} {
		if _, err := os.Stat(d); err == nil {
			return fmt.Errorf("%s exists: another bench running, or a crashed one (remove it)", d)
		}
	}
	es, err := selectEngines(o)
	if err != nil {
		return err
	}
	if o.regPull, err = newRegistry("pull", o.base); err != nil {
		return err
	}
	if o.regPush, err = newRegistry("push", o.base); err != nil {
		return err
	}
	start := time.Now()
	host := snapshotHost()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigc
		slog.Warn("interrupted; cleaning up", "signal", s.String())
		cancel()
	}()
	// Whatever happens below, the engines are stopped and the host is put
	// back as it was.
	defer teardown(es, host, o)

	if err := setup(ctx, o, es); err != nil {
		return err
	}
	rs := newResults()
	benchIdleMemory(es, rs)
	steps := []struct {
		name string
		fn   func()
	}{
		{"run", func() { benchRun(ctx, o, es, rs) }},
		{"net", func() { benchNet(ctx, o, es, rs) }},
		{"exec", func() { benchExec(ctx, o, es, rs) }},
		{"many", func() { benchMany(ctx, o, es, rs) }},
		{"batch", func() { benchBatch(ctx, o, es, rs) }},
		{"logs", func() { benchLogs(ctx, o, es, rs) }},
		{"load", func() {
			img := filepath.Join(o.base, "bigimage.tar")
			size, err := makeBigImage(img, bigImageRef, 2, int64(o.loadMB)*1000*1000/2, 0)
			if err != nil {
				slog.Error("make load image", "err", err)
				return
			}
			benchLoadSave(ctx, o, es, rs, img, size)
			_ = os.Remove(img)
		}},
		{"registry", func() { benchPullPush(ctx, o, es, rs) }},
		{"build", func() { benchBuild(ctx, o, es, rs) }},
		{"stats", func() { benchStats(ctx, o, es, rs) }},
		{"health", func() { benchHealth(ctx, o, es, rs) }},
		{"systemd", func() {
			if o.systemdTar != "" {
				benchSystemd(ctx, o, es, rs)
			}
		}},
		{"sdready", func() {
			if o.systemdTar != "" {
				benchSystemdReady(ctx, o, es, rs)
			}
		}},
	}
	for _, s := range steps {
		if !o.want(s.name) || ctx.Err() != nil {
			continue
		}
		t0 := time.Now()
		slog.Info("measuring", "step", s.name)
		s.fn()
		slog.Info("measured", "step", s.name, "took", time.Since(t0).Round(time.Millisecond))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return writeReport(o, es, rs, start)
}

func writeReport(o *options, es []*Engine, rs *Results, start time.Time) error {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name
	}
	now := time.Now()
	rep := &Report{
		Date:    now.Format("2006-01-02 15:04"),
		Mode:    map[bool]string{true: "quick", false: "full"}[o.quick],
		Host:    hostInfo(),
		Engines: map[string]string{},
		Settle:  o.settle,
		Settings: map[string]int{"samples": o.samples, "containers": o.containers, "container_rounds": o.rounds,
			"load_mb": o.loadMB, "load_rounds": o.loadRounds, "log_mb": o.logMB, "log_rounds": o.logRounds, "boot_rounds": o.bootRounds,
			"registry_mb": o.regMB, "registry_rounds": o.regRounds, "build_rounds": o.buildRounds, "stats_rounds": o.statsRounds,
			"health_seconds": o.healthSecs, "health_rounds": o.healthRounds},
	}
	for _, e := range es {
		rep.Engines[e.Name] = e.version()
	}
	if r, ok := rs.byKey["disk_write"]; ok {
		s := summarise(r.samples["host"])
		rep.Disk = &s
		delete(rs.byKey, "disk_write")
	}
	rep.Results = rs.finish(names)
	if o.debug {
		rep.Phases = parsePhases(es[0].logPath)
	}
	rep.Elapsed = time.Since(start).Seconds()
	md := rep.markdown(names)
	fmt.Println(md)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	stem := filepath.Join(o.out, now.Format("2006-01-02-1504")+"-"+rep.Mode)
	if err := os.WriteFile(stem+".md", []byte(md), 0o644); err != nil {
		return err
	}
	if err := writeJSON(stem+".json", rep); err != nil {
		return err
	}
	slog.Info("wrote", "markdown", stem+".md", "json", stem+".json")
	if o.debug {
		// Keep our daemon's log (outside the tree, it is large) for the
		// phase timings in detail.
		if b, err := os.ReadFile(es[0].logPath); err == nil {
			_ = os.WriteFile(lastOursLog, b, 0o644)
			slog.Info("our dockerd's log kept", "path", lastOursLog)
		}
	}
	return nil
}

func hostInfo() map[string]string {
	h := map[string]string{}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h["kernel"] = strings.TrimSpace(string(b))
	}
	h["cpus"] = fmt.Sprint(numCPU())
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		h["memory"] = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	return h
}

// selectEngines makes the engines -engines names, in the order given;
// ours comes first, as every ratio is ours ÷ peer.
func selectEngines(o *options) ([]*Engine, error) {
	makers := map[string]func(*options) *Engine{"ours": newOurs, "docker": newDocker, "podman": newPodman}
	var es []*Engine
	for _, name := range strings.Split(o.engines, ",") {
		mk, ok := makers[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("-engines: unknown engine %q (known: ours, docker, podman)", name)
		}
		e := mk(o)
		e.settle = o.settle
		es = append(es, e)
	}
	if es[0].Name != "ours" {
		return nil, fmt.Errorf("-engines: ours must come first, got %q", o.engines)
	}
	return es, nil
}
