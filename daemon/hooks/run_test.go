package hooks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// recordingHook appends "NAME PHASE CONFIG" to record.
func recordingHook(t *testing.T, dir, name, record string) string {
	return writeHook(t, dir, name, `echo "$(basename "$0") $1 $2" >> `+record)
}

func readLines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestRunOrderArgsStdinEnv(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	record := filepath.Join(out, "record")
	a := recordingHook(t, dir, "a", record)
	b := writeHook(t, dir, "b", `echo "$(basename "$0") $1 $2" >> `+record+`
cat > `+out+`/stdin.$1
env > `+out+`/env.$1
pwd > `+out+`/pwd.$1`)
	cfg := filepath.Join(out, "bundle", "config.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"id":"abc","pid":42}`
	for _, phase := range []string{Prestart, Poststop} {
		if err := Run(context.Background(), Options{Phase: phase, ConfigPath: cfg, Hooks: []string{a, b}, State: []byte(state)}); err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
	}
	want := []string{"a prestart " + cfg, "b prestart " + cfg, "b poststop " + cfg, "a poststop " + cfg}
	if got := readLines(t, record); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("runs = %q, want %q", got, want)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "stdin.prestart")); string(got) != state {
		t.Errorf("stdin = %q", got)
	}
	if got := readLines(t, filepath.Join(out, "pwd.poststop")); got[0] != filepath.Dir(cfg) {
		t.Errorf("cwd = %q, want the bundle", got)
	}
	// Only container=docker comes from us; dash adds PWD itself.
	for _, kv := range readLines(t, filepath.Join(out, "env.prestart")) {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "container":
			if kv != "container=docker" {
				t.Errorf("env %q", kv)
			}
		case "PWD", "OLDPWD", "SHLVL", "_":
		default:
			t.Errorf("unexpected environment variable %q", kv)
		}
	}
}

func TestPrestartFailureStopsWithNameAndStderr(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	record := filepath.Join(out, "record")
	a := recordingHook(t, dir, "10-ok", record)
	b := writeHook(t, dir, "20-broken", `echo "cannot reach the monitor" >&2; exit 3`)
	c := recordingHook(t, dir, "30-after", record)
	err := Run(context.Background(), Options{Phase: Prestart, Hooks: []string{a, b, c}})
	var he *HookError
	if !errors.As(err, &he) || he.Hook != "20-broken" || he.TimedOut {
		t.Fatalf("err = %#v", err)
	}
	for _, s := range []string{"20-broken", "cannot reach the monitor", "exit status 3", "prestart"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if got := readLines(t, record); len(got) != 1 || !strings.HasPrefix(got[0], "10-ok ") {
		t.Errorf("runs = %q: the hook after the failure must not run", got)
	}
}

func TestPoststopRunsAllDespiteFailures(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	record := filepath.Join(out, "record")
	a := recordingHook(t, dir, "a", record)
	b := writeHook(t, dir, "b", `echo "b broke" >&2; exit 1`)
	c := recordingHook(t, dir, "c", record)
	d := filepath.Join(dir, "d-removed-meanwhile")
	err := Run(context.Background(), Options{Phase: Poststop, Hooks: []string{a, b, c, d}})
	got := hookErrors(err)
	if len(got) != 2 || got[0].Hook != "d-removed-meanwhile" || got[1].Hook != "b" || got[1].Stderr != "b broke" {
		t.Fatalf("errors = %v", err)
	}
	if runs := readLines(t, record); len(runs) != 2 || !strings.HasPrefix(runs[0], "c ") || !strings.HasPrefix(runs[1], "a ") {
		t.Fatalf("runs = %q, want c then a", runs)
	}
}

func TestTimeoutKillsHookAndItsChildren(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	pidFile := filepath.Join(out, "child")
	h := writeHook(t, dir, "slow", `sleep 60 & echo $! > `+pidFile+`; echo "waiting" >&2; wait`)
	start := time.Now()
	err := Run(context.Background(), Options{Phase: Prestart, Hooks: []string{h}, Timeout: 300 * time.Millisecond})
	var he *HookError
	if !errors.As(err, &he) || !he.TimedOut || he.Stderr != "waiting" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "slow") {
		t.Errorf("message %q", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("no child pid: %q", b)
	}
	// The orphaned child is reaped by init; wait until it is gone.
	deadline := time.Now().Add(5 * time.Second)
	for unix.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("hook's child %d survived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHookLeavingBackgroundProcessDoesNotBlock(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	pidFile := filepath.Join(out, "child")
	// A "log agent" that forks a daemon still holding its stdio.
	h := writeHook(t, dir, "agent", `sleep 5 & echo $! > `+pidFile)
	start := time.Now()
	if err := Run(context.Background(), Options{Phase: Prestart, Hooks: []string{h}, Timeout: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("waited %s for the hook's background child", d)
	}
	b, _ := os.ReadFile(pidFile)
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}
