package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

const (
	busybox    = "busybox"
	systemdRef = "sdbench/systemd:latest"
)

var netNone = []string{"--network", "none"}

func args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// benchRun: `run --rm busybox true` through the CLI (no network) and the
// same life cycle through the API; the default bridge is benchNet's.
func benchRun(ctx context.Context, o *options, es []*Engine, rs *Results) {
	rs.define("run_cli", "run --rm --network none busybox true (CLI)", "ms", "lower", "")
	rs.define("run_api", "create/attach/start/wait/remove (API)", "ms", "lower", "Go client v28 with API version negotiation")
	for i := 0; i < o.samples; i++ {
		for _, e := range es {
			if v, err := e.timed(ctx, args([]string{"run", "--rm"}, netNone, []string{busybox, "true"})...); err != nil {
				rs.fail("run_cli", e.Name, err)
			} else {
				rs.add("run_cli", e.Name, v)
			}
		}
		for _, e := range es {
			if v, err := apiRun(ctx, e); err != nil {
				rs.fail("run_api", e.Name, err)
			} else {
				rs.add("run_api", e.Name, v)
			}
		}
	}
}

// apiRun is what `docker run --rm` does, as separate API calls, timed
// end to end: create, attach, wait(next-exit), start, drain, remove.
func apiRun(ctx context.Context, e *Engine) (float64, error) {
	t0 := sampleStart(e)
	cr, err := e.api.ContainerCreate(ctx,
		&container.Config{Image: busybox, Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	defer func() {
		if err != nil {
			_ = e.api.ContainerRemove(context.Background(), cr.ID, container.RemoveOptions{Force: true})
		}
	}()
	hj, err := e.api.ContainerAttach(ctx, cr.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return 0, fmt.Errorf("attach: %w", err)
	}
	defer hj.Close()
	waitc, errc := e.api.ContainerWait(ctx, cr.ID, container.WaitConditionNextExit)
	if err = e.api.ContainerStart(ctx, cr.ID, container.StartOptions{}); err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	if _, err = stdcopy.StdCopy(io.Discard, io.Discard, hj.Reader); err != nil {
		return 0, fmt.Errorf("attach stream: %w", err)
	}
	select {
	case w := <-waitc:
		if w.StatusCode != 0 {
			err = fmt.Errorf("exit status %d", w.StatusCode)
			return 0, err
		}
	case err = <-errc:
		return 0, fmt.Errorf("wait: %w", err)
	}
	if err = e.api.ContainerRemove(ctx, cr.ID, container.RemoveOptions{}); err != nil {
		return 0, fmt.Errorf("remove: %w", err)
	}
	return ms(time.Since(t0)), nil
}

// benchExec: `exec C true` into a running container.
func benchExec(ctx context.Context, o *options, es []*Engine, rs *Results) {
	rs.define("exec", "exec C true", "ms", "lower", "")
	ids := map[string]string{}
	for _, e := range es {
		id, err := e.run(ctx, args([]string{"run", "-d"}, netNone, []string{busybox, "sleep", "1000"})...)
		if err != nil {
			rs.fail("exec", e.Name, err)
			continue
		}
		ids[e.Name] = id
	}
	for i := 0; i < o.samples; i++ {
		for _, e := range es {
			id, ok := ids[e.Name]
			if !ok {
				continue
			}
			if v, err := e.timed(ctx, "exec", id, "true"); err != nil {
				rs.fail("exec", e.Name, err)
			} else {
				rs.add("exec", e.Name, v)
			}
		}
	}
	for _, e := range es {
		if id, ok := ids[e.Name]; ok {
			_ = e.forceRemove(context.Background(), id)
		}
	}
}

// benchIdleMemory reads each engine's resident memory with no container.
func benchIdleMemory(es []*Engine, rs *Results) {
	rs.define("rss_idle", "daemon RSS, idle", "MiB", "lower",
		"ours: dockerd; docker: dockerd + containerd; podman: `podman system service` (its CLI needs no daemon)")
	time.Sleep(time.Second)
	for _, e := range es {
		m := e.memory()
		rs.add("rss_idle", e.Name, float64(m.DaemonKiB)/1024)
	}
}

// benchMany: N detached containers up (sequential `run -d`), memory with
// all of them running, then `stop -t 0` and `rm` of all of them.
func benchMany(ctx context.Context, o *options, es []*Engine, rs *Results) {
	n := o.containers
	rs.define("many_up", fmt.Sprintf("%d x run -d sleep (sequential)", n), "s", "lower", "")
	rs.define("many_down", fmt.Sprintf("stop -t 0 + rm of %d containers", n), "s", "lower", "one stop and one rm command with all IDs")
	rs.define("rss_many", fmt.Sprintf("daemon + helpers RSS, %d running", n), "MiB", "lower",
		"sum of VmRSS; helpers: ours `docker-shim __shim` (one per group of containers), docker containerd-shim-runc-v2, podman conmon")
	rs.define("rss_daemon_many", fmt.Sprintf("daemon RSS alone, %d running", n), "MiB", "lower", "")
	rs.define("rss_helper", "helper RSS per running container", "MiB", "lower", "helpers' VmRSS sum / containers")
	rs.define("pss_helper", "helper PSS per running container", "MiB", "lower",
		"helpers' Pss (smaps_rollup) sum / containers: shared binary text counted once")
	for round := 0; round < o.rounds; round++ {
		for _, e := range es {
			var ids []string
			t0 := sampleStart(e)
			var failed error
			for i := 0; i < n; i++ {
				id, err := e.run(ctx, args([]string{"run", "-d"}, netNone, []string{busybox, "sleep", "1000"})...)
				if err != nil {
					failed = err
					break
				}
				ids = append(ids, id)
			}
			up := time.Since(t0)
			if failed != nil {
				rs.fail("many_up", e.Name, failed)
			} else {
				rs.add("many_up", e.Name, up.Seconds())
				time.Sleep(500 * time.Millisecond)
				m := e.memory()
				rs.add("rss_many", e.Name, float64(m.DaemonKiB+m.HelperKiB)/1024)
				if e.Name != "podman" { // its containers do not go through the API service
					rs.add("rss_daemon_many", e.Name, float64(m.DaemonKiB)/1024)
				}
				// Our shims each host a group of containers.
				if m.Helpers != n && e.Name != "ours" {
					slog.Warn("helper count differs from containers", "engine", e.Name, "helpers", m.Helpers, "containers", n)
				}
				rs.add("rss_helper", e.Name, float64(m.HelperKiB)/1024/float64(n))
				rs.add("pss_helper", e.Name, float64(m.HelperPSS)/1024/float64(n))
			}
			if len(ids) == 0 {
				continue
			}
			stopAndRemove(ctx, e, rs, "many_down", ids, failed == nil)
		}
	}
}

// benchLogs: a container writes logMB of 100-byte lines to stdout; timed
// from `run -d` until `logs` has returned every byte.
func benchLogs(ctx context.Context, o *options, es []*Engine, rs *Results) {
	size := int64(o.logMB) * 1000 * 1000
	rs.define("logs_total", fmt.Sprintf("%d MB to stdout, run -d until logs returned all", o.logMB), "s", "lower", "")
	rs.define("logs_write", fmt.Sprintf("%d MB to stdout: run -d until wait returned", o.logMB), "s", "lower", "the container's writing and the log driver")
	rs.define("logs_read", fmt.Sprintf("`logs` of %d MB", o.logMB), "s", "lower", "reading back through the CLI, bytes counted")
	rs.define("logs_rate", "log throughput (end to end)", "MB/s", "higher", "")
	script := fmt.Sprintf("yes %s | head -c %d", strings.Repeat("x", 99), size)
	for round := 0; round < o.logRounds; round++ {
		for _, e := range es {
			t0 := sampleStart(e)
			id, err := e.run(ctx, args([]string{"run", "-d"}, netNone, []string{busybox, "sh", "-c", script})...)
			if err != nil {
				rs.fail("logs_total", e.Name, err)
				continue
			}
			if _, err := e.run(ctx, "wait", id); err != nil {
				rs.fail("logs_total", e.Name, err)
				_ = e.forceRemove(context.Background(), id)
				continue
			}
			t1 := time.Now()
			got, err := countOutput(e.cmd(ctx, "logs", id))
			t2 := time.Now()
			_ = e.forceRemove(context.Background(), id)
			if err == nil && got != size {
				err = fmt.Errorf("logs returned %d bytes, want %d", got, size)
			}
			if err != nil {
				rs.fail("logs_total", e.Name, err)
				continue
			}
			rs.add("logs_total", e.Name, t2.Sub(t0).Seconds())
			rs.add("logs_write", e.Name, t1.Sub(t0).Seconds())
			rs.add("logs_read", e.Name, t2.Sub(t1).Seconds())
			rs.add("logs_rate", e.Name, float64(size)/1e6/t2.Sub(t0).Seconds())
		}
	}
}

// countOutput runs c and counts the bytes it writes to stdout.
func countOutput(c *exec.Cmd) (int64, error) {
	out, err := c.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := c.Start(); err != nil {
		return 0, err
	}
	n, cerr := io.Copy(io.Discard, out)
	if err := c.Wait(); err != nil {
		return n, err
	}
	return n, cerr
}

// benchLoadSave: `load` and `save` of the random image, beside dd's
// sequential write rate of the same filesystem, measured each round.
func benchLoadSave(ctx context.Context, o *options, es []*Engine, rs *Results, image string, size int64) {
	mb := float64(size) / 1e6
	rs.define("disk_write", "disk sequential write (dd 1 GB, oflag=direct, fdatasync)", "MB/s", "higher", "same filesystem as the data roots")
	rs.define("load", fmt.Sprintf("load of a %.0f MB image (2 random layers)", mb), "s", "lower", "")
	rs.define("load_pct", "load rate as % of disk write rate", "%", "higher", "")
	rs.define("save", fmt.Sprintf("save -o FILE of the %.0f MB image", mb), "s", "lower", "")
	rs.define("save_pct", "save rate as % of disk write rate", "%", "higher", "")
	out := filepath.Join(o.base, "save-out.tar")
	for round := 0; round < o.loadRounds; round++ {
		disk, err := ddWrite(ctx, filepath.Join(o.base, "dd.test"))
		if err != nil {
			rs.fail("disk_write", "host", err)
		} else {
			rs.add("disk_write", "host", disk)
		}
		for _, e := range es {
			v, err := e.timed(ctx, "load", "-i", image)
			if err != nil {
				rs.fail("load", e.Name, err)
				continue
			}
			rs.add("load", e.Name, v/1000)
			if disk > 0 {
				rs.add("load_pct", e.Name, 100*mb/(v/1000)/disk)
			}
			_ = os.Remove(out)
			v, err = e.timed(ctx, "save", "-o", out, bigImageRef)
			if err != nil {
				rs.fail("save", e.Name, err)
			} else {
				rs.add("save", e.Name, v/1000)
				if disk > 0 {
					rs.add("save_pct", e.Name, 100*mb/(v/1000)/disk)
				}
			}
			_ = os.Remove(out)
			if _, err := e.run(ctx, "rmi", bigImageRef); err != nil {
				slog.Warn("rmi", "engine", e.Name, "err", err)
			}
		}
	}
}

var ddRate = regexp.MustCompile(`copied, ([0-9.]+) s`)

// ddWrite writes 1 GB with O_DIRECT and fdatasync and returns MB/s.
func ddWrite(ctx context.Context, path string) (float64, error) {
	defer os.Remove(path)
	out, err := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of="+path, "bs=1M", "count=1000",
		"oflag=direct", "conv=fdatasync").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("dd: %w: %s", err, out)
	}
	m := ddRate.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("dd: no timing in %q", out)
	}
	secs, _ := strconv.ParseFloat(string(m[1]), 64)
	return 1000 * 1.048576 / secs, nil
}

// benchSystemd: boot the systemd image until `systemctl is-system-running`
// says running or degraded. Docker has no systemd mode (see the note).
func benchSystemd(ctx context.Context, o *options, es []*Engine, rs *Results) {
	rs.define("systemd_boot", "systemd image: run -d to is-system-running = running|degraded", "s", "lower",
		"ours --init=systemd, podman --systemd=always; docker has no systemd mode (not measured)")
	for round := 0; round < o.bootRounds; round++ {
		for _, e := range es {
			var runArgs []string
			switch e.Name {
			case "ours":
				runArgs = args([]string{"run", "-d", "--init=systemd"}, netNone, []string{systemdRef})
			case "podman":
				runArgs = args([]string{"run", "-d", "--systemd=always"}, netNone, []string{systemdRef, "/sbin/init"})
			default:
				rs.note("systemd_boot", e.Name, "no systemd mode")
				continue
			}
			v, state, err := bootSystemd(ctx, e, runArgs)
			if err != nil {
				rs.fail("systemd_boot", e.Name, err)
				continue
			}
			slog.Info("systemd booted", "engine", e.Name, "state", state, "s", v)
			rs.add("systemd_boot", e.Name, v)
		}
	}
}

func bootSystemd(ctx context.Context, e *Engine, runArgs []string) (float64, string, error) {
	t0 := sampleStart(e)
	id, err := e.run(ctx, runArgs...)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = e.forceRemove(context.Background(), id) }()
	deadline := t0.Add(90 * time.Second)
	state := ""
	for time.Now().Before(deadline) {
		// is-system-running exits non-zero for every state but running,
		// so only its output counts.
		out, _ := e.run(ctx, "exec", id, "systemctl", "is-system-running")
		state = strings.TrimSpace(out)
		if state == "running" || state == "degraded" {
			return time.Since(t0).Seconds(), state, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, state, fmt.Errorf("not booted after 90s (state %q)", state)
}

// stopAndRemove times one "stop -t 0" and one "rm" naming all ids, as
// figure key (recorded only if record: the containers all came up); on
// failure they are removed by force.
func stopAndRemove(ctx context.Context, e *Engine, rs *Results, key string, ids []string, record bool) {
	t0 := sampleStart(e)
	_, err := e.run(ctx, append([]string{"stop", "-t", "0"}, ids...)...)
	if err == nil {
		_, err = e.run(ctx, append([]string{"rm"}, ids...)...)
	}
	if err != nil {
		rs.fail(key, e.Name, err)
		_ = e.forceRemove(context.Background(), ids...)
	} else if record {
		rs.add(key, e.Name, time.Since(t0).Seconds())
	}
}
