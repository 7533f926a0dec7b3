//go:build integration

package integrationcli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// recorderHook is a hooks.d script that records, per phase, its arguments
// (into a shared order file), stdin, environment and a copy of CONFIG_PATH.
// The environment is dash's view: it has no PATH of its own and finds
// commands through its built-in default search path.
const recorderHook = `#!/bin/sh
n=$(basename "$0")
echo "$n $1 $2" >> OUT/order
cat > "OUT/$n.$1.stdin"
env > "OUT/$n.$1.env"
cp "$2" "OUT/$n.$1.config"
`

func TestHooks(t *testing.T) {
	d := NewDaemon(t)
	hooksDir, out := filepath.Join(d.Dir, "hooks.d"), filepath.Join(d.Dir, "hooks-out")
	for _, dir := range []string{hooksDir, out} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.ReplaceAll(recorderHook, "OUT", out)
	for _, name := range []string{"b-second", "a-first"} {
		if err := os.WriteFile(filepath.Join(hooksDir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Not hooks: a non-executable file and a directory.
	_ = os.WriteFile(filepath.Join(hooksDir, "README"), []byte("x"), 0o644)
	_ = os.Mkdir(filepath.Join(hooksDir, "sub.d"), 0o755)
	d.Args = append(d.Args, "--hooks-dir", filepath.Join(d.Dir, "missing"), "--hooks-dir", hooksDir)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)

	if out := d.MustCLI(t, "info"); !strings.Contains(out, "\n Number of Docker Hooks: 2\n") {
		t.Errorf("our docker info lacks the hook count:\n%s", out)
	}
	// The API carries the count. The stock CLI decodes /info into its own
	// struct and drops fields it does not know, so it cannot show it; it
	// must still work.
	if raw := rawGet(t, d, "/info"); !strings.Contains(raw, `"NumberOfDockerHooks":2`) {
		t.Errorf("/info lacks the hook count: %s", raw)
	}
	if r := d.Stock("info", "--format", "{{json .}}"); r.Code != 0 {
		t.Errorf("stock docker info: %s", r)
	}

	id := remember(d.MustCLI(t, "run", "-d", "busybox", "echo", "hooked"))
	if code := d.MustCLI(t, "wait", id); code != "0" {
		t.Fatalf("exit %s", code)
	}
	cfg := filepath.Join(d.ExecRoot, "containers", id, "config.json")
	order := filepath.Join(out, "order")
	waitFor(t, func() bool {
		b, _ := os.ReadFile(order)
		return strings.Count(string(b), "\n") >= 4
	})
	b, _ := os.ReadFile(order)
	want := strings.Join([]string{
		"a-first prestart " + cfg, "b-second prestart " + cfg,
		"b-second poststop " + cfg, "a-first poststop " + cfg, "",
	}, "\n")
	if string(b) != want {
		t.Fatalf("hook runs:\n%s\nwant:\n%s", b, want)
	}

	for _, phase := range []string{"prestart", "poststop"} {
		var st specs.State
		raw, _ := os.ReadFile(filepath.Join(out, "a-first."+phase+".stdin"))
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatalf("%s stdin %q: %v", phase, raw, err)
		}
		if st.ID != id || st.Bundle != filepath.Dir(cfg) {
			t.Errorf("%s state: %s", phase, raw)
		}
		if phase == "prestart" && (st.Pid <= 0 || st.Status != specs.StateCreating) {
			t.Errorf("prestart state without the container's pid: %s", raw)
		}
		if phase == "poststop" && st.Status != specs.StateStopped {
			t.Errorf("poststop state: %s", raw)
		}
		var spec specs.Spec
		raw, _ = os.ReadFile(filepath.Join(out, "a-first."+phase+".config"))
		if err := json.Unmarshal(raw, &spec); err != nil || spec.Process == nil ||
			strings.Join(spec.Process.Args, " ") != "echo hooked" {
			t.Errorf("%s CONFIG_PATH is not the container's OCI config (%v): %.200s", phase, err, raw)
		}
		// Environment: exactly container=docker from us, plus PWD, which
		// the shell sets itself. Nothing of the daemon's (PATH, HOME...).
		env, _ := os.ReadFile(filepath.Join(out, "b-second."+phase+".env"))
		for _, kv := range strings.Fields(string(env)) {
			k, _, _ := strings.Cut(kv, "=")
			if k != "container" && k != "PWD" {
				t.Errorf("%s hook environment has %q", phase, kv)
			}
		}
		if !strings.Contains(string(env), "container=docker\n") {
			t.Errorf("%s hook environment lacks container=docker: %q", phase, env)
		}
	}

	// A hook added while the daemon runs counts from the next start, and
	// its failure fails the start with its name and stderr.
	fail := filepath.Join(hooksDir, "c-fail")
	if err := os.WriteFile(fail, []byte("#!/bin/sh\n[ \"$1\" = prestart ] || exit 0\necho 'monitor unreachable' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := d.MustCLI(t, "info"); !strings.Contains(out, "Number of Docker Hooks: 3\n") {
		t.Errorf("hook count not rescanned:\n%s", out)
	}
	r := d.CLI("run", "--name", "failing", "busybox", "true")
	if r.Code == 0 || !strings.Contains(r.Stderr, "c-fail") || !strings.Contains(r.Stderr, "monitor unreachable") {
		t.Fatalf("run with a failing prestart hook: %s", r)
	}
	t.Logf("docker run with a failing hook: %s", strings.TrimSpace(r.Stderr))
	failedID := remember(d.MustCLI(t, "inspect", "--format", "{{.Id}}", "failing"))
	if st := d.MustCLI(t, "inspect", "--format", "{{.State.Running}}", failedID); st != "false" {
		t.Errorf("container left running after a failed hook: %s", st)
	}
	if _, err := os.Stat(filepath.Join(d.ExecRoot, "containers", failedID)); !os.IsNotExist(err) {
		t.Errorf("runtime state left behind: %v", err)
	}
	// docker start reports the same.
	if r := d.CLI("start", "failing"); r.Code == 0 || !strings.Contains(r.Stderr, "monitor unreachable") {
		t.Errorf("start with a failing prestart hook: %s", r)
	}
	if err := os.Remove(fail); err != nil {
		t.Fatal(err)
	}
	if out := d.MustCLI(t, "start", "-a", "failing"); out != "" {
		t.Errorf("start after removing the hook: %q", out)
	}
	if n := strings.Count(mustRead(t, order), "prestart"); n < 4 {
		t.Errorf("only %s prestart runs recorded", strconv.Itoa(n))
	}
}

// rawGet is GET path on d's socket, as the raw body.
func rawGet(t *testing.T, d *Daemon, path string) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.Sock)
	}}}
	resp, err := hc.Get("http://d" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
