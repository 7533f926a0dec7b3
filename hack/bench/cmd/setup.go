package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// lastOursLog keeps our daemon's debug log of the last run.
const lastOursLog = "/var/tmp/sdbench-ours-dockerd.log"

func numCPU() int { return runtime.NumCPU() }

// setup starts the engines and gives each the same images.
func setup(ctx context.Context, o *options, es []*Engine) error {
	if err := writeConfigs(es, []string{o.regPull.Addr, o.regPush.Addr}); err != nil {
		return err
	}
	for _, c := range [][]string{
		{"ip", "link", "add", dockerBridge, "type", "bridge"},
		{"ip", "addr", "add", dockerBridgeIP, "dev", dockerBridge},
		{"ip", "link", "set", dockerBridge, "up"},
	} {
		if out, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(c, " "), err, out)
		}
	}
	for _, e := range es {
		if err := e.start(ctx); err != nil {
			return err
		}
	}
	for _, e := range es {
		bb, sd := busybox, systemdRef
		if e.Name == "podman" {
			// Podman names an unqualified import localhost/NAME, which
			// its Docker-compatible API does not find as "busybox".
			bb, sd = "docker.io/library/busybox:latest", "docker.io/"+systemdRef
		}
		t0 := time.Now()
		if _, err := e.run(ctx, "import", "-c", `CMD ["sh"]`, o.busyboxTar, bb); err != nil {
			return err
		}
		if o.systemdTar != "" && (o.want("systemd") || o.want("sdready")) {
			if _, err := e.run(ctx, "import", "-c", `CMD ["/sbin/init"]`, o.systemdTar, sd); err != nil {
				return err
			}
		}
		slog.Info("images imported", "engine", e.Name, "took", time.Since(t0).Round(time.Millisecond))
		// One unmeasured run each, so no engine pays first-use costs
		// (page cache, lazily made directories) inside the figures.
		if _, err := e.run(ctx, "run", "--rm", "--network", "none", busybox, "true"); err != nil {
			return err
		}
		if e.DefaultNet != nil {
			if _, err := e.run(ctx, args([]string{"run", "--rm"}, e.DefaultNet, []string{busybox, "true"})...); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *Engine) version() string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	switch e.Name {
	case "podman":
		v, _ := e.run(ctx, "version", "--format", "{{.Client.Version}}")
		rt, _ := e.run(ctx, "info", "--format", "{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Version}}")
		return "podman " + v + ", runtime " + strings.SplitN(rt, "\n", 2)[0]
	default:
		v, _ := e.run(ctx, "version", "--format", "{{.Server.Version}} (API {{.Server.APIVersion}})")
		return v
	}
}

// teardown removes every container, stops the daemons we started (by PID),
// ends any helper they left (again by PID), and restores the host.
func teardown(es []*Engine, host *hostState, o *options) {
	slog.Info("cleaning up")
	for _, e := range es {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		ids, err := e.run(ctx, "ps", "-aq")
		if err == nil && ids != "" {
			if err := e.forceRemove(ctx, strings.Fields(ids)...); err != nil {
				slog.Warn("remove containers", "engine", e.Name, "err", err)
			}
		}
		if e.Name == "podman" {
			_, _ = e.run(ctx, "network", "rm", "-f", podmanNetwork, userNetwork)
		} else {
			removeUserNetwork(ctx, e)
		}
		cancel()
	}
	stopRegistries()
	for i := len(es) - 1; i >= 0; i-- {
		es[i].stop()
	}
	for _, e := range es {
		for _, pid := range e.helperPIDs() {
			slog.Warn("helper left behind, killing", "engine", e.Name, "pid", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range e.dnsPIDs() {
			slog.Warn("name server left behind, killing", "engine", e.Name, "pid", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(200 * time.Millisecond)
	host.restore([]string{o.base, o.run})
}
