package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/runconfig"
)

// The spec steps run in this order; the invariants below are why.
func TestSpecStepsOrder(t *testing.T) {
	var names []string
	for _, s := range specSteps {
		names = append(names, s.name)
	}
	want := []string{
		"host config", "hostname", "process", "mounts", "namespaces", "network", "pod", "init reaper",
		"OCI spec", "rootfs propagation", "systemd profile", "notify socket", "unit binding", "passed files", "hooks",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("spec steps\n%q\nwant\n%q", names, want)
	}
	at := func(name string) int { return slices.Index(names, name) }
	for _, before := range [][2]string{
		{"host config", "network"},      // the base network mode is refined
		{"hostname", "process"},         // $HOSTNAME
		{"hostname", "mounts"},          // /etc/hostname, /etc/hosts
		{"process", "init reaper"},      // the reaper wraps the args
		{"mounts", "init reaper"},       // the reaper's bind is added to the mounts
		{"namespaces", "pod"},           // the pod's namespaces win
		{"network", "pod"},              // the pod's network namespace wins
		{"init reaper", "OCI spec"},     // options, then the spec
		{"OCI spec", "systemd profile"}, // --init=systemd after the base spec
		{"systemd profile", "notify socket"},
		{"notify socket", "passed files"}, // LISTEN_* after every env step
		{"passed files", "hooks"},
	} {
		if at(before[0]) >= at(before[1]) {
			t.Errorf("step %q is not before %q", before[0], before[1])
		}
	}
	if names[len(names)-1] != "hooks" {
		t.Error("hooks are not the last step")
	}
}

func testContainer(t *testing.T) *container.Container {
	t.Helper()
	return &container.Container{
		ID:         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		Root:       t.TempDir(),
		Path:       "/bin/sh",
		Args:       []string{"-c", "true"},
		Config:     &containertypes.Config{Env: []string{"A=1", "B=2"}},
		HostConfig: &containertypes.HostConfig{},
	}
}

// startProcess runs the spec steps that make the container's first
// process (no daemon needed for them).
func startProcess(t *testing.T, c *container.Container) *specBuild {
	t.Helper()
	d := &Daemon{}
	b := &specBuild{c: c, rootfs: t.TempDir()}
	for _, s := range specSteps {
		if s.name == "mounts" {
			break
		}
		if err := s.apply(d, b); err != nil {
			t.Fatalf("step %s: %v", s.name, err)
		}
	}
	return b
}

func envValue(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// An empty hostname is the short ID, an empty working directory "/", in
// the spec and in $HOSTNAME; the config's win when set.
func TestStartProcessDefaults(t *testing.T) {
	c := testContainer(t)
	b := startProcess(t, c)
	if b.opts.Hostname != c.ShortID() || b.hostname != c.ShortID() {
		t.Errorf("hostname %q, want the short ID", b.opts.Hostname)
	}
	if h, _ := envValue(b.opts.Env, "HOSTNAME"); h != c.ShortID() {
		t.Errorf("$HOSTNAME %q", h)
	}
	if b.opts.Cwd != "/" {
		t.Errorf("cwd %q", b.opts.Cwd)
	}
	if !slices.Equal(b.opts.Args, []string{"/bin/sh", "-c", "true"}) {
		t.Errorf("args %q", b.opts.Args)
	}

	c.Config.Hostname, c.Config.WorkingDir, c.Config.Tty = "web", "/srv/app", true
	b = startProcess(t, c)
	if b.opts.Hostname != "web" || b.opts.Cwd != "/srv/app" || !b.opts.Tty {
		t.Errorf("hostname %q cwd %q tty %v", b.opts.Hostname, b.opts.Cwd, b.opts.Tty)
	}
	if st, err := os.Stat(filepath.Join(b.rootfs, "srv/app")); err != nil || !st.IsDir() {
		t.Errorf("the working directory was not made in the rootfs: %v", err)
	}
	if v, _ := envValue(b.opts.Env, "TERM"); v != "xterm" {
		t.Errorf("TERM %q with a tty", v)
	}
}

// A step's error is wrapped with its name and keeps its class.
func TestSpecStepErrorNamed(t *testing.T) {
	c := testContainer(t)
	c.Config.User = "nosuchuser"
	_, err := (&Daemon{}).buildSpec(c, t.TempDir(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "process: ") {
		t.Fatalf("error %v, want one named by the process step", err)
	}
	if !errdefs.IsInvalidParameter(err) {
		t.Errorf("error %v lost its class", err)
	}
}

func execOf(opts containertypes.ExecOptions) *execConfig {
	return &execConfig{opts: opts}
}

// An exec's working directory is its own, else the container's, else "/".
func TestExecCwdFallbacks(t *testing.T) {
	c := testContainer(t)
	for _, tc := range []struct {
		exec, ctr, want string
	}{
		{"", "", "/"},
		{"", "/ctr", "/ctr"},
		{"/exec", "/ctr", "/exec"},
		{"/exec", "", "/exec"},
	} {
		c.Config.WorkingDir = tc.ctr
		if got := execProcess(c, execOf(containertypes.ExecOptions{Cmd: []string{"pwd"}, WorkingDir: tc.exec})).Cwd; got != tc.want {
			t.Errorf("exec %q, container %q: cwd %q, want %q", tc.exec, tc.ctr, got, tc.want)
		}
	}
}

// A plain exec runs as the container's first process does (env, cwd,
// $HOSTNAME); an exec's -e, -w, -u and -t are over them.
func TestStartAndExecProcessesAgree(t *testing.T) {
	c := testContainer(t)
	c.Config.WorkingDir = "/work"
	c.LinkEnv = []string{"DB_NAME=/web/db", "A=from-link"}
	start := startProcess(t, c)
	e := execOf(containertypes.ExecOptions{Cmd: start.opts.Args})
	e.uid, e.gid, e.groups = start.opts.UID, start.opts.GID, start.opts.AdditionalGids
	x := execProcess(c, e)
	if !slices.Equal(x.Env, start.opts.Env) || x.Cwd != start.opts.Cwd || !slices.Equal(x.Args, start.opts.Args) ||
		x.UID != start.opts.UID || x.GID != start.opts.GID || x.Tty != start.opts.Tty {
		t.Errorf("exec %+v\nstart %+v", x, start.opts)
	}
	if v, _ := envValue(x.Env, "A"); v != "1" {
		t.Errorf("A=%q: the container's env loses to its links'", v)
	}

	e = execOf(containertypes.ExecOptions{Cmd: []string{"env"}, Env: []string{"A=exec", "NEW=1"}, WorkingDir: "/tmp", Tty: true})
	e.uid, e.gid, e.groups = 1000, 1000, []uint32{5}
	x = execProcess(c, e)
	if want := runconfig.MergeEnv(start.opts.Env, []string{"A=exec", "NEW=1"}); !slices.Equal(x.Env, want) {
		t.Errorf("exec env %q, want %q", x.Env, want)
	}
	if x.Cwd != "/tmp" || !x.Tty || x.UID != 1000 || x.GID != 1000 || !slices.Equal(x.AdditionalGids, []uint32{5}) {
		t.Errorf("exec process %+v", x)
	}
}

// With --network container:X, an exec's $HOSTNAME is the donor's, which
// the start copied into the container's hostname file, as the first
// process's is; otherwise the container's own.
func TestExecHostname(t *testing.T) {
	c := testContainer(t)
	if h := execHostname(c); h != c.ShortID() {
		t.Errorf("exec hostname %q, want the short ID", h)
	}
	c.HostConfig.NetworkMode = "container:donor"
	if h := execHostname(c); h != c.ShortID() {
		t.Errorf("exec hostname %q without a hostname file", h)
	}
	if err := os.WriteFile(c.File("hostname"), []byte("donorhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x := execProcess(c, execOf(containertypes.ExecOptions{Cmd: []string{"hostname"}}))
	if h, _ := envValue(x.Env, "HOSTNAME"); h != "donorhost" {
		t.Errorf("exec $HOSTNAME %q, want the donor's", h)
	}
}

// A pod's hostname names the UTS namespace; the process's $HOSTNAME stays
// the container's (as before the steps were one list).
func TestPodHostname(t *testing.T) {
	c := testContainer(t)
	c.Pod = &runconfig.Pod{Hostname: "podhost", UTSNS: "/run/pods/uts"}
	b := startProcess(t, c)
	podOptions(c, &b.opts)
	if b.opts.Hostname != "podhost" || b.opts.UTS.Path != "/run/pods/uts" {
		t.Errorf("pod hostname %q uts %+v", b.opts.Hostname, b.opts.UTS)
	}
	s, err := oci.Build(b.opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hostname != "podhost" {
		t.Errorf("spec hostname %q", s.Hostname)
	}
	if h, _ := envValue(s.Process.Env, "HOSTNAME"); h != c.ShortID() {
		t.Errorf("$HOSTNAME %q", h)
	}
}
