package container

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/spf13/pflag"
)

// parseRun parses run-style arguments the way the run command does.
func parseRun(t *testing.T, args ...string) (*parsed, error) {
	t.Helper()
	var o containerOptions
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetInterspersed(false)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o.parse(fs, fs.Args())
}

func TestParseRunFlags(t *testing.T) {
	env := filepath.Join(t.TempDir(), "env")
	os.WriteFile(env, []byte("# c\nB=file\nA=file\n"), 0o644)
	p, err := parseRun(t, "-e", "A=cli", "--env-file", env, "-w", "/w", "-u", "1:2", "--name", "n",
		"-h", "host", "-l", "k=v", "--stop-signal", "SIGRTMIN+3", "--stop-timeout", "7", "-m", "64m",
		"--cpus", "0.5", "--pids-limit", "40", "--privileged", "--cap-add", "net_admin", "--cap-drop", "all",
		"--group-add", "staff", "--group-add", "777",
		"--security-opt", "no-new-privileges", "--read-only", "--tmpfs", "/run", "-v", "/h:/c:ro",
		"--network", "none", "--log-driver", "json-file", "--log-opt", "max-size=1m", "--restart", "on-failure:2",
		"--ulimit", "nofile=10:20", "--init", "busybox", "sh", "-c", "exit 3")
	if err != nil {
		t.Fatal(err)
	}
	c, h := p.config, p.host
	if c.Image != "busybox" || !reflect.DeepEqual([]string(c.Cmd), []string{"sh", "-c", "exit 3"}) {
		t.Fatalf("image/cmd: %s %v", c.Image, c.Cmd)
	}
	if !reflect.DeepEqual(c.Env, []string{"B=file", "A=file", "A=cli"}) {
		t.Fatalf("env %v", c.Env)
	}
	if c.WorkingDir != "/w" || c.User != "1:2" || c.Hostname != "host" || c.Labels["k"] != "v" ||
		c.StopSignal != "SIGRTMIN+3" || c.StopTimeout == nil || *c.StopTimeout != 7 {
		t.Fatalf("config %+v", c.Config)
	}
	if h.Memory != 64<<20 || h.NanoCPUs != 5e8 || h.PidsLimit == nil || *h.PidsLimit != 40 || !h.Privileged || !h.ReadonlyRootfs {
		t.Fatalf("resources %+v", h.Resources)
	}
	if !reflect.DeepEqual([]string(h.CapAdd), []string{"CAP_NET_ADMIN"}) || !reflect.DeepEqual([]string(h.CapDrop), []string{"ALL"}) {
		t.Fatalf("caps %v %v", h.CapAdd, h.CapDrop)
	}
	if !reflect.DeepEqual(h.GroupAdd, []string{"staff", "777"}) {
		t.Fatalf("--group-add %v", h.GroupAdd)
	}
	if h.NetworkMode != "none" || !reflect.DeepEqual(h.Binds, []string{"/h:/c:ro"}) || h.Tmpfs["/run"] != "" {
		t.Fatalf("host %+v", h)
	}
	if h.LogConfig.Type != "json-file" || h.LogConfig.Config["max-size"] != "1m" || h.RestartPolicy.MaximumRetryCount != 2 {
		t.Fatalf("log/restart %+v %+v", h.LogConfig, h.RestartPolicy)
	}
	if h.Init == nil || !*h.Init || c.Init != "" {
		t.Fatalf("--init: host %v config %q", h.Init, c.Init)
	}
	if len(h.Ulimits) != 1 || h.Ulimits[0].Hard != 20 {
		t.Fatalf("ulimits %v", h.Ulimits)
	}
	// Without -a: stdout and stderr attached, stdin not (no -i).
	if c.AttachStdin || !c.AttachStdout || !c.AttachStderr || c.OpenStdin {
		t.Fatalf("attach %v %v %v", c.AttachStdin, c.AttachStdout, c.AttachStderr)
	}
}

func TestParseInitSystemdAndDefaults(t *testing.T) {
	p, err := parseRun(t, "--init=systemd", "-it", "img")
	if err != nil {
		t.Fatal(err)
	}
	if p.config.Init != "systemd" || p.host.Init != nil {
		t.Fatalf("init=systemd: %q %v", p.config.Init, p.host.Init)
	}
	if !p.config.Tty || !p.config.OpenStdin || !p.config.AttachStdin || !p.config.StdinOnce {
		t.Fatalf("-it: %+v", p.config.Config)
	}
	p, err = parseRun(t, "img")
	if err != nil {
		t.Fatal(err)
	}
	if p.host.Init != nil || p.config.Entrypoint != nil || p.config.StopTimeout != nil || p.host.PidsLimit != nil || p.host.NetworkMode != "default" {
		t.Fatalf("defaults: %+v %+v", p.config.Config, p.host)
	}
	p, err = parseRun(t, "--entrypoint", "", "img")
	if err != nil || !reflect.DeepEqual([]string(p.config.Entrypoint), []string{""}) {
		t.Fatalf("--entrypoint \"\": %v %v", p.config.Entrypoint, err)
	}
	p, err = parseRun(t, "-a", "stderr", "img")
	if err != nil || p.config.AttachStdout || !p.config.AttachStderr {
		t.Fatalf("-a stderr: %+v %v", p.config.Config, err)
	}
	for _, bad := range [][]string{{"-m", "lots", "img"}, {"--cpus", "x", "img"}, {"--init=tini", "img"}, {"-a", "stdfoo", "img"}, {"--restart", "sometimes", "img"}} {
		if _, err := parseRun(t, bad...); err == nil {
			t.Errorf("%v: want error", bad)
		}
	}
}

// The create body goes out with Init at the top level (where Config's
// fields live) and the HostConfig as given.
func TestCreateContainerWithInitBody(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	var query string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			w.Header().Set("Api-Version", "1.44")
			return
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		query = r.URL.RawQuery
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"0123","Warnings":["careful"]}`))
	})}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	defer srv.Close()
	c, err := client.NewClientWithOpts(client.WithHost("unix://"+sock), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	p, err := parseRun(t, "--init=systemd", "-m", "1g", "img", "/sbin/init")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := createContainerWithInit(context.Background(), c, p, "sys")
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != "0123" || len(resp.Warnings) != 1 || query != "name=sys" {
		t.Fatalf("resp %+v query %s", resp, query)
	}
	hc, _ := body["HostConfig"].(map[string]any)
	if body["Init"] != "systemd" || body["Image"] != "img" || hc["Memory"] != float64(1<<30) {
		t.Fatalf("body %v", body)
	}
	if _, ok := hc["Init"]; ok && hc["Init"] != nil {
		t.Fatalf("HostConfig.Init must be unset with --init=systemd: %v", hc["Init"])
	}
}

func TestParseResourceFlags(t *testing.T) {
	p, err := parseRun(t, "-m", "64m", "--memory-swap", "128m", "--cpus", "1.5", "-c", "512",
		"--cpuset-cpus", "0-1", "--cpuset-mems", "0", "--pids-limit", "-1", "--blkio-weight", "300", "img")
	if err != nil {
		t.Fatal(err)
	}
	h := p.host
	if h.Memory != 64<<20 || h.MemorySwap != 128<<20 || h.NanoCPUs != 15e8 || h.CPUShares != 512 ||
		h.CpusetCpus != "0-1" || h.CpusetMems != "0" || h.PidsLimit == nil || *h.PidsLimit != -1 || h.BlkioWeight != 300 {
		t.Fatalf("resources %+v", h.Resources)
	}
	p, err = parseRun(t, "--cpu-shares", "2", "--memory-swap", "-1", "-m", "1g", "img")
	if err != nil || p.host.CPUShares != 2 || p.host.MemorySwap != -1 {
		t.Fatalf("--cpu-shares 2 --memory-swap -1: %+v %v", p.host.Resources, err)
	}
	// Values only the daemon can judge go through as given.
	p, err = parseRun(t, "--cpu-shares", "-5", "--pids-limit", "-5", "--blkio-weight", "5", "--cpuset-cpus", "99", "-m", "1k", "img")
	if err != nil || p.host.CPUShares != -5 || *p.host.PidsLimit != -5 || p.host.BlkioWeight != 5 || p.host.CpusetCpus != "99" || p.host.Memory != 1024 {
		t.Fatalf("daemon-judged values: %+v %v", p.host.Resources, err)
	}
	p, err = parseRun(t, "img")
	if err != nil || p.host.MemorySwap != 0 || p.host.CPUShares != 0 || p.host.CpusetCpus != "" || p.host.BlkioWeight != 0 {
		t.Fatalf("defaults: %+v %v", p.host.Resources, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cpus", "0"}, `invalid argument "0" for "--cpus" flag: the number of CPUs must be more than 0`},
		{[]string{"--cpus", "0.0"}, `"--cpus" flag`},
		{[]string{"--cpus", ""}, `"--cpus" flag`},
		{[]string{"--cpus", "-1"}, `invalid argument "-1" for "--cpus" flag`},
		{[]string{"--memory-swap", "-5"}, `invalid argument "-5" for "--memory-swap" flag`},
		{[]string{"--memory-swap", "lots"}, `"--memory-swap" flag`},
		{[]string{"-m", "-1"}, `invalid argument "-1" for "-m, --memory" flag`},
		{[]string{"--blkio-weight", "-1"}, `"--blkio-weight" flag`},
		{[]string{"--blkio-weight", "70000"}, `"--blkio-weight" flag`},
		{[]string{"-c", "x"}, `"-c, --cpu-shares" flag`},
	} {
		_, err := parseRun(t, append(tc.args, "img")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// The limits reach the wire under the Engine API's names.
func TestResourceFlagsJSON(t *testing.T) {
	p, err := parseRun(t, "--memory-swap", "-1", "-m", "6m", "-c", "100", "--cpuset-cpus", "0", "--cpuset-mems", "0", "--blkio-weight", "10", "img")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p.host)
	var hc map[string]any
	json.Unmarshal(b, &hc)
	for k, want := range map[string]any{"Memory": float64(6 << 20), "MemorySwap": float64(-1), "CpuShares": float64(100),
		"CpusetCpus": "0", "CpusetMems": "0", "BlkioWeight": float64(10)} {
		if hc[k] != want {
			t.Errorf("%s = %v, want %v", k, hc[k], want)
		}
	}
}

func TestParseDeviceAndCgroupParent(t *testing.T) {
	p, err := parseRun(t, "--device", "/dev/null:/dev/xnull", "--device", "/dev/zero:r", "--cgroup-parent", "/my/parent", "img")
	if err != nil {
		t.Fatal(err)
	}
	want := []container.DeviceMapping{
		{PathOnHost: "/dev/null", PathInContainer: "/dev/xnull", CgroupPermissions: "rwm"},
		{PathOnHost: "/dev/zero", PathInContainer: "/dev/zero", CgroupPermissions: "r"},
	}
	if !reflect.DeepEqual(p.host.Devices, want) || p.host.CgroupParent != "/my/parent" {
		t.Fatalf("devices %+v, cgroup parent %q", p.host.Devices, p.host.CgroupParent)
	}
	if _, err := parseRun(t, "--device", "/dev/null:/dev/x:rwx", "img"); err == nil ||
		err.Error() != `invalid argument "/dev/null:/dev/x:rwx" for "--device" flag: bad mode specified: rwx` {
		t.Fatalf("bad mode: %v", err)
	}
}

func TestParseNamespaceFlags(t *testing.T) {
	p, err := parseRun(t, "--ipc", "container:donor", "--pid", "host", "--uts", "host", "--shm-size", "1g", "img")
	if err != nil {
		t.Fatal(err)
	}
	h := p.host
	if h.IpcMode != "container:donor" || h.PidMode != "host" || h.UTSMode != "host" || h.ShmSize != 1<<30 {
		t.Fatalf("ipc %q pid %q uts %q shm %d", h.IpcMode, h.PidMode, h.UTSMode, h.ShmSize)
	}
	p, err = parseRun(t, "img")
	if err != nil {
		t.Fatal(err)
	}
	// Unset, the daemon's defaults apply (private IPC, 64 MiB).
	if p.host.IpcMode != "" || p.host.ShmSize != 0 {
		t.Fatalf("defaults: ipc %q shm %d", p.host.IpcMode, p.host.ShmSize)
	}
	if _, err := parseRun(t, "--shm-size", "lots", "img"); err == nil ||
		err.Error() != `invalid argument "lots" for "--shm-size" flag: invalid size: 'lots'` {
		t.Fatalf("bad size: %v", err)
	}
}

func TestParseAnnotations(t *testing.T) {
	p, err := parseRun(t, "--annotation", "io.sdengine.cgroup-layout=unified", "--annotation", "a=b=c", "--annotation", "bare", "img")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"io.sdengine.cgroup-layout": "unified", "a": "b=c", "bare": ""}
	if !reflect.DeepEqual(p.host.Annotations, want) {
		t.Errorf("annotations %v, want %v", p.host.Annotations, want)
	}
	if p, err = parseRun(t, "img"); err != nil || p.host.Annotations != nil {
		t.Errorf("no --annotation: %v %v", p.host.Annotations, err)
	}
}
