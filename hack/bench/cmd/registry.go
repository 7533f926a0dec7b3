package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// registryBin is Debian's docker-registry (the distribution registry 2.8).
const registryBin = "/usr/bin/docker-registry"

// registry is one loopback registry the bench runs: plain HTTP on
// 127.0.0.1 with a port of its own, storage under the private base dir.
type registry struct {
	Name string // "pull" or "push"
	Addr string // 127.0.0.1:PORT
	dir  string

	cmd    *exec.Cmd
	exited chan struct{}
}

var (
	registriesMu sync.Mutex
	registries   []*registry // started ones, stopped by teardown
)

// freeLoopbackPort asks the kernel for an unused port on 127.0.0.1.
func freeLoopbackPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func newRegistry(name, base string) (*registry, error) {
	addr, err := freeLoopbackPort()
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", name, err)
	}
	return &registry{Name: name, Addr: addr, dir: filepath.Join(base, "registry-"+name)}, nil
}

// registryConfig is the registry's whole configuration: filesystem
// storage, no access log, and the one loopback address.
func (r *registry) config() string {
	return fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  secret: sdbench-not-secret
`, filepath.Join(r.dir, "data"), r.Addr)
}

// start runs the registry with empty storage and waits for /v2/.
func (r *registry) start(ctx context.Context) error {
	if err := os.RemoveAll(r.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "data"), 0o700); err != nil {
		return err
	}
	cfg := filepath.Join(r.dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(r.config()), 0o600); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(filepath.Dir(r.dir), "registry-"+r.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	c := exec.Command(registryBin, "serve", cfg)
	c.Stdout, c.Stderr = lf, lf
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start registry %s: %w", r.Name, err)
	}
	r.cmd = c
	r.exited = make(chan struct{})
	go func() { _ = c.Wait(); close(r.exited) }()
	registriesMu.Lock()
	registries = append(registries, r)
	registriesMu.Unlock()

	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr+"/v2/", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.exited:
			return fmt.Errorf("registry %s exited at start", r.Name)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("registry %s not answering on %s: %v", r.Name, r.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the registry by its PID (SIGTERM, SIGKILL after 10 s).
func (r *registry) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		slog.Warn("registry did not stop on SIGTERM, killing", "registry", r.Name, "pid", r.cmd.Process.Pid)
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	r.cmd = nil
	registriesMu.Lock()
	for i, x := range registries {
		if x == r {
			registries = append(registries[:i], registries[i+1:]...)
			break
		}
	}
	registriesMu.Unlock()
}

// reset gives the registry empty storage: stopped, wiped, started, so a
// push uploads every layer (no blob to find, none to mount from).
func (r *registry) reset(ctx context.Context) error {
	r.stop()
	return r.start(ctx)
}

func stopRegistries() {
	registriesMu.Lock()
	rs := append([]*registry(nil), registries...)
	registriesMu.Unlock()
	for _, r := range rs {
		r.stop()
	}
}
