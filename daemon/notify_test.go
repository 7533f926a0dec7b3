package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/systemdprofile"
	runconfigopts "github.com/sdengine/engine/runconfig/opts"
)

func TestCgroupIsContainers(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	other := "f" + id[1:]
	for _, tc := range []struct {
		cgroup string
		want   bool
	}{
		{"12:pids:/docker/" + id + "/payload\n0::/docker/" + id + "/payload\n", true},
		{"1:name=systemd:/docker/" + id + "/payload/init.scope\n", true},
		{"0::/custom/parent/" + id + "/payload/system.slice/x.service\n", true},
		{"1:name=systemd:/machine.slice/machine-docker-" + id + ".slice/docker-" + id + ".scope/init.scope\n", true},
		{"0::/docker/" + other + "/payload\n", false},
		{"0::/docker/" + id + "\n", false}, // the limits cgroup holds no process of the container's
		{"0::/user.slice/" + id + "/payloadx\n", false},
		{"0::/system.slice/docker.service\n", false},
		{"garbage", false},
	} {
		if got := cgroupIsContainers(tc.cgroup, id); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.cgroup, got, tc.want)
		}
	}
	if pidInContainer(os.Getpid(), id) {
		t.Error("the test process is in the container")
	}
}

func TestNotifyWantedAndSpec(t *testing.T) {
	root := t.TempDir()
	c := &container.Container{ID: "abc", Root: root, Config: &containertypes.Config{}}
	if notifyWanted(c) {
		t.Fatal("a plain container wants a notify socket")
	}
	c.InitSystem = runconfigopts.InitSystemd
	if !notifyWanted(c) {
		t.Fatal("a systemd container has no notify socket")
	}
	c.Config.Labels = map[string]string{"io.sdengine.sdnotify": "false"}
	if notifyWanted(c) {
		t.Fatal("the label did not turn it off")
	}
	c.InitSystem = ""
	c.Config.Labels["io.sdengine.sdnotify"] = "true"
	if !notifyWanted(c) {
		t.Fatal("the label did not turn it on")
	}
	d := &Daemon{}
	dir := systemdprofile.RunHostDir(root)

	// Without the profile: a /run/host of its own, read-only.
	spec := &specs.Spec{Process: &specs.Process{Env: []string{"PATH=/bin"}}}
	if err := d.applyNotify(c, spec); err != nil {
		t.Fatal(err)
	}
	if c.NotifyDir != dir || !slices.Contains(spec.Process.Env, "NOTIFY_SOCKET=/run/host/notify") {
		t.Fatalf("NotifyDir %q env %v", c.NotifyDir, spec.Process.Env)
	}
	if len(spec.Mounts) != 1 || spec.Mounts[0].Destination != "/run/host" || spec.Mounts[0].Source != dir || !slices.Contains(spec.Mounts[0].Options, "ro") {
		t.Fatalf("mounts %+v", spec.Mounts)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatal(err)
	}

	// With the profile: its /run/host under its /run tmpfs; the user's
	// NOTIFY_SOCKET wins.
	spec = &specs.Spec{Process: &specs.Process{Env: []string{"NOTIFY_SOCKET=/mine"}}, Mounts: []specs.Mount{
		{Destination: "/run", Type: "tmpfs"}, systemdprofile.RunHostMount(dir),
	}}
	if err := d.applyNotify(c, spec); err != nil {
		t.Fatal(err)
	}
	if c.NotifyDir != dir || len(spec.Mounts) != 2 || slices.Contains(spec.Process.Env, "NOTIFY_SOCKET=/run/host/notify") {
		t.Fatalf("NotifyDir %q mounts %+v env %v", c.NotifyDir, spec.Mounts, spec.Process.Env)
	}

	// A user's mount at, above or below /run/host: no socket.
	for _, dst := range []string{"/run", "/run/host", "/run/host/x"} {
		spec = &specs.Spec{Process: &specs.Process{}, Mounts: []specs.Mount{{Destination: dst, Type: "bind", Source: filepath.Join(root, "u")}}}
		if err := d.applyNotify(c, spec); err != nil {
			t.Fatal(err)
		}
		if c.NotifyDir != "" || len(spec.Mounts) != 1 || len(spec.Process.Env) != 0 {
			t.Errorf("user's %s: NotifyDir %q mounts %+v env %v", dst, c.NotifyDir, spec.Mounts, spec.Process.Env)
		}
	}
}

func TestLastStatus(t *testing.T) {
	h := &containertypes.Health{Log: []*containertypes.HealthcheckResult{
		{Output: "STATUS=one\nREADY=1"}, {Output: "watchdog timeout: no WATCHDOG=1 within 1s"},
	}}
	if got := lastStatus(h); got != "one" {
		t.Fatalf("%q", got)
	}
}
