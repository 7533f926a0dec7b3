package hooks

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The test binary doubles as the wrapper, as dockerd does in production.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		Main(os.Args[2:])
	}
	os.Exit(m.Run())
}

// wrapper runs the test binary as the hooks wrapper the way libcontainer
// runs an OCI hook: state on stdin, the hook's Args and Env.
func wrapper(t *testing.T, w Wrapper, phase string, hooks []string, state string) (stderr string, code int) {
	t.Helper()
	var spec specs.Spec
	Apply(&spec, w, hooks)
	h := spec.Hooks.CreateRuntime[0]
	if phase == Poststop {
		h = spec.Hooks.Poststop[0]
	}
	var errb bytes.Buffer
	cmd := &exec.Cmd{Path: h.Path, Args: h.Args, Env: h.Env, Stdin: strings.NewReader(state), Stderr: &errb}
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return errb.String(), 0
}

func TestWrapper(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := Wrapper{Binary: self, ConfigPath: filepath.Join(out, "config.json"), LogFile: filepath.Join(out, "hooks.log")}
	ok := writeHook(t, dir, "1-ok", `cat > `+out+`/stdin.$1`)
	bad := writeHook(t, dir, "2-bad", `echo "agent down" >&2; exit 7`)

	// Success: the hook gets the state with the bundle filled in.
	if stderr, code := wrapper(t, w, Prestart, []string{ok}, `{"ociVersion":"1.2.0","id":"c1","pid":9,"bundle":""}`); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var st specs.State
	b, _ := os.ReadFile(filepath.Join(out, "stdin.prestart"))
	if err := json.Unmarshal(b, &st); err != nil || st.ID != "c1" || st.Pid != 9 || st.Bundle != out {
		t.Fatalf("state %s: %v", b, err)
	}

	// A failing prestart hook: exit 1, its name and stderr on our stderr.
	stderr, code := wrapper(t, w, Prestart, []string{ok, bad}, `{"id":"c1"}`)
	if code != 1 || !strings.Contains(stderr, `"2-bad"`) || !strings.Contains(stderr, "agent down") {
		t.Fatalf("prestart failure: exit %d, stderr %q", code, stderr)
	}

	// A failing poststop hook: the others still run, exit 0, failure logged.
	_ = os.Remove(filepath.Join(out, "stdin.poststop"))
	if stderr, code := wrapper(t, w, Poststop, []string{ok, bad}, `{"id":"c2","status":"stopped"}`); code != 0 {
		t.Fatalf("poststop: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "stdin.poststop")); err != nil {
		t.Fatalf("hook before the failing one (in reverse order) did not run: %v", err)
	}
	logb, _ := os.ReadFile(w.LogFile)
	for _, s := range []string{"phase=poststop", "container=c2", "hook=2-bad", "agent down", "phase=prestart"} {
		if !strings.Contains(string(logb), s) {
			t.Errorf("log lacks %q:\n%s", s, logb)
		}
	}

	usage := exec.Command(self, Command, "bogus", "x", "y")
	if err := usage.Run(); usage.ProcessState == nil || usage.ProcessState.ExitCode() != 2 {
		t.Errorf("bad phase: %v", err)
	}
}

func TestApply(t *testing.T) {
	var spec specs.Spec
	Apply(&spec, Wrapper{Binary: "/d"}, nil)
	if spec.Hooks != nil {
		t.Fatal("hooks added without hooks")
	}
	w := Wrapper{Binary: "/usr/bin/dockerd", ConfigPath: "/run/c/config.json", LogFile: "/l"}
	Apply(&spec, w, []string{"/h/a", "/h/b"})
	pre, post := spec.Hooks.CreateRuntime, spec.Hooks.Poststop
	if len(pre) != 1 || len(post) != 1 {
		t.Fatalf("hooks = %+v", spec.Hooks)
	}
	want := "/usr/bin/dockerd __hooks prestart /run/c/config.json /l /h/a /h/b"
	if got := strings.Join(pre[0].Args, " "); got != want || pre[0].Path != w.Binary {
		t.Errorf("prestart args %q", got)
	}
	if *pre[0].Timeout != 70 || *post[0].Timeout != 30 {
		t.Errorf("OCI timeouts %d %d", *pre[0].Timeout, *post[0].Timeout)
	}
}
