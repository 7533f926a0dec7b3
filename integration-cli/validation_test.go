//go:build integration

package integrationcli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// badCreate is a create request the daemon must refuse before anything
// exists: the docker run flags, the same as a create body's HostConfig,
// and what the error says (Docker's words where Docker has them).
type badCreate struct {
	name       string
	args       []string
	hostConfig string
	want       string
	// oursLocal, stockLocal: that CLI refuses the value itself, with
	// want in its message, before asking the daemon.
	oursLocal, stockLocal bool
}

// escapeParent is a cgroup parent name no other test uses: nothing of
// that name may appear under /sys/fs/cgroup.
var escapeParent = fmt.Sprintf("it-escape-%d", os.Getpid())

// emptyDevDir is a directory given as a device: this suite's own, since a
// second suite on the machine removes its copy when its test ends.
var emptyDevDir = fmt.Sprintf("/var/empty-it-%d", os.Getpid())

func badCreates() []badCreate {
	return []badCreate{
		{"device missing", []string{"--device", "/dev/nosuch"},
			`{"Devices":[{"PathOnHost":"/dev/nosuch","PathInContainer":"/dev/nosuch","CgroupPermissions":"rwm"}]}`,
			`error gathering device information while adding custom device "/dev/nosuch": no such file or directory`, false, false},
		{"device not a device", []string{"--device", "/etc/passwd:/dev/x"},
			`{"Devices":[{"PathOnHost":"/etc/passwd","PathInContainer":"/dev/x","CgroupPermissions":"rwm"}]}`,
			`error gathering device information while adding custom device "/etc/passwd": not a device node`, false, false},
		{"device empty directory", []string{"--device", emptyDevDir + ":/dev/x"},
			`{"Devices":[{"PathOnHost":"` + emptyDevDir + `","PathInContainer":"/dev/x","CgroupPermissions":"rwm"}]}`,
			`error gathering device information while adding custom device "` + emptyDevDir + `": not a device node`, false, false},
		{"device bad mode", []string{"--device", "/dev/null:/dev/x:rwx"},
			`{"Devices":[{"PathOnHost":"/dev/null","PathInContainer":"/dev/x","CgroupPermissions":"rwx"}]}`,
			"bad mode specified: rwx", true, true},
		{"device relative container path", []string{"--device", "/dev/null:dev/x"},
			`{"Devices":[{"PathOnHost":"/dev/null","PathInContainer":"dev/x","CgroupPermissions":"rwm"}]}`,
			"dev/x is not an absolute path", true, true},
		{"ulimit unknown", []string{"--ulimit", "nosuch=1"},
			`{"Ulimits":[{"Name":"nosuch","Soft":1,"Hard":1}]}`,
			"invalid ulimit type: nosuch", true, true},
		{"ulimit soft above hard", []string{"--ulimit", "nofile=20:10"},
			`{"Ulimits":[{"Name":"nofile","Soft":20,"Hard":10}]}`,
			"ulimit soft limit must be less than or equal to hard limit: 20 > 10", true, true},
		{"log max-size -1", []string{"--log-opt", "max-size=-1"},
			`{"LogConfig":{"Type":"json-file","Config":{"max-size":"-1"}}}`, "invalid size: '-1'", false, false},
		{"log max-size 0", []string{"--log-opt", "max-size=0"},
			`{"LogConfig":{"Type":"json-file","Config":{"max-size":"0"}}}`, "max-size must be a positive number", false, false},
		{"log max-file 0", []string{"--log-opt", "max-file=0"},
			`{"LogConfig":{"Type":"json-file","Config":{"max-file":"0"}}}`, "max-file cannot be less than 1", false, false},
		{"log unknown option", []string{"--log-opt", "bogus=1"},
			`{"LogConfig":{"Type":"json-file","Config":{"bogus":"1"}}}`, "unknown log opt 'bogus' for json-file log driver", false, false},
		{"log compress without rotation", []string{"--log-opt", "compress=true"},
			`{"LogConfig":{"Type":"json-file","Config":{"compress":"true"}}}`,
			"compress cannot be true when max-file is less than 2 or max-size is not set", false, false},
		{"cgroup parent ..", []string{"--cgroup-parent", ".."}, `{"CgroupParent":".."}`, `invalid --cgroup-parent ".."`, false, false},
		{"cgroup parent ../x", []string{"--cgroup-parent", "../" + escapeParent},
			`{"CgroupParent":"../` + escapeParent + `"}`, `".." is not allowed`, false, false},
		{"cgroup parent out of /docker", []string{"--cgroup-parent", "/docker/../../" + escapeParent},
			`{"CgroupParent":"/docker/../../` + escapeParent + `"}`, `".." is not allowed`, false, false},
	}
}

// Values the engine used to accept and then ignore (or fail on only at
// start) are refused at create with a 400 naming them: through the API,
// our CLI and the stock CLI (docker run exits 125), and nothing is left:
// no container, no name, no cgroup.
func TestValidationRefusedAtCreate(t *testing.T) {
	if err := os.MkdirAll(emptyDevDir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(emptyDevDir)
	cases := badCreates()
	before := allIDs(t)
	t.Run("api", func(t *testing.T) {
		for _, c := range cases {
			body := fmt.Sprintf(`{"Image":"busybox","Cmd":["true"],"HostConfig":%s}`, c.hostConfig)
			status, resp := apiDo(t, "POST", "/v1.51/containers/create?name=valid-api", body)
			var msg struct{ Message string }
			json.Unmarshal([]byte(resp), &msg)
			if status != 400 || !strings.Contains(msg.Message, c.want) {
				t.Errorf("%s: %s: got %d %s; want 400 containing %q", c.name, body, status, resp, c.want)
			}
		}
	})
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		ours := strings.HasSuffix(t.Name(), "/ours")
		name := "valid-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
		for _, c := range cases {
			args := append(append([]string{"run", "--name", name}, c.args...), "busybox", "true")
			r := cli(args...)
			local := c.stockLocal
			if ours {
				local = c.oursLocal
			}
			code := 125
			if !ours && !local && strings.Contains(c.want, "no such file or directory") {
				// The stock CLI turns any run error saying so into 127,
				// as it does against Docker.
				code = 127
			}
			if r.Code != code || strings.Contains(r.Stderr, "Error response from daemon") == local || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("%s: docker %s: %s\nwant exit %d and an error containing %q (from the daemon: %v)", c.name, strings.Join(args, " "), r, code, c.want, !local)
			}
		}
		// The name was never reserved.
		id := remember(shared.MustCLI(t, "create", "--name", name, "busybox", "true"))
		shared.MustCLI(t, "rm", id)
	})
	if after := allIDs(t); !slices.Equal(before, after) {
		t.Errorf("docker ps -a changed: before %v, after %v", before, after)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/" + escapeParent); len(left) > 0 {
		t.Errorf("cgroups made for a refused --cgroup-parent: %v", left)
	}
}

// --device puts the node in the container and its rule in the device
// cgroup: /dev/null as /dev/xnull reads and writes; /dev/zero with "r"
// only reads.
func TestDevice(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		r := cli("run", "--rm", "--device", "/dev/null:/dev/xnull", "busybox", "sh", "-c",
			`stat -c '%t:%T %a' /dev/xnull && echo data > /dev/xnull && cat /dev/xnull && echo ok`)
		if r.Code != 0 || r.Stdout != "1:3 666\nok\n" {
			t.Errorf("/dev/null as /dev/xnull: %s", r)
		}
		r = cli("run", "--rm", "--device", "/dev/zero:r", "busybox", "sh", "-c",
			`head -c 3 /dev/zero | od -An -c; echo x > /dev/zero && echo wrote`)
		if r.Code == 0 || !strings.Contains(r.Stdout, `\0  \0  \0`) || strings.Contains(r.Stdout, "wrote") ||
			!strings.Contains(r.Stderr, "Operation not permitted") {
			t.Errorf("/dev/zero read-only: %s", r)
		}
		// A directory brings the devices in it.
		r = cli("run", "--rm", "--device", "/dev/net:/dev/mynet", "busybox", "stat", "-c", "%F %t:%T", "/dev/mynet/tun")
		if r.Code != 0 || r.Stdout != "character special file a:c8\n" {
			t.Errorf("/dev/net as /dev/mynet: %s", r)
		}
	})
	// The spec has the node and the rule, after the deny-all.
	id := remember(shared.MustCLI(t, "run", "-d", "--device", "/dev/zero:/dev/z:rw", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	s := ociSpec(t, id)
	var found bool
	for _, d := range s.Linux.Devices {
		found = found || (d.Path == "/dev/z" && d.Type == "c" && d.Major == 1 && d.Minor == 5)
	}
	rules := s.Linux.Resources.Devices
	if !found || len(rules) < 2 || rules[0].Allow || !rules[1].Allow || *rules[1].Major != 1 || *rules[1].Minor != 5 || rules[1].Access != "rw" {
		t.Errorf("spec devices %+v, rules %+v", s.Linux.Devices, rules)
	}
	if dev := shared.MustCLI(t, "inspect", "--format", "{{range .HostConfig.Devices}}{{.PathOnHost}} {{.PathInContainer}} {{.CgroupPermissions}};{{end}}", id); dev != "/dev/zero /dev/z rw;" {
		t.Errorf("inspect: %s", dev)
	}
}

// An exec whose user or group the container lacks is refused at create
// with Docker's 400 and message (the client exits 1), never as "unable to
// upgrade to tcp, received 400".
func TestExecUnknownUser(t *testing.T) {
	id := remember(shared.MustCLI(t, "run", "-d", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	const want = "unable to find user nosuch: no matching entries in passwd file"
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		r := cli("exec", "-u", "nosuch", id, "true")
		if r.Code != 1 || !strings.Contains(r.Stderr, want) || strings.Contains(r.Stderr, "upgrade") {
			t.Errorf("exec -u nosuch: %s\nwant exit 1 and %q", r, want)
		}
		r = cli("exec", "-u", "0:nosuchgroup", id, "true")
		if r.Code != 1 || !strings.Contains(r.Stderr, "no matching entries in group file") {
			t.Errorf("exec -u 0:nosuchgroup: %s", r)
		}
		// Detached, there is no stream: the start request fails.
		r = cli("exec", "-d", "-u", "nosuch", id, "true")
		if r.Code == 0 || !strings.Contains(r.Stderr, want) {
			t.Errorf("exec -d -u nosuch: %s", r)
		}
		// The container goes on, and execs that can start do.
		if r := cli("exec", "-u", "nobody", id, "id", "-u"); r.Code != 0 || r.Stdout != "65534\n" {
			t.Errorf("exec -u nobody: %s", r)
		}
	})
}

// A pidfile left by a daemon that is gone does not stop the next one:
// not a killed daemon its parent has not reaped yet (a zombie, still in
// /proc), nor another program that got its pid. A live daemon's does.
func TestPidfileStaleOwner(t *testing.T) {
	d := NewDaemon(t)
	defer d.Cleanup(t)
	pidfile := filepath.Join(d.Dir, "d.pid")
	startWith := func(what string, pid int) {
		t.Helper()
		if err := os.WriteFile(pidfile, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		d.Start(t)
		if b, _ := os.ReadFile(pidfile); string(b) != strconv.Itoa(d.Pid()) {
			t.Errorf("%s: pidfile holds %q, not the new daemon's %d", what, b, d.Pid())
		}
		d.Stop(t)
	}

	// A dead dockerd not yet reaped: our child, killed, never waited for.
	zombie := exec.Command(dockerd, "--pidfile", filepath.Join(d.Dir, "z.pid"), "-H", "unix://"+filepath.Join(d.Dir, "z.sock"),
		"--data-root", filepath.Join(d.Dir, "zroot"), "--exec-root", filepath.Join(d.Dir, "zrun"), "--config-file", filepath.Join(d.Dir, "daemon.json"))
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	zpid := zombie.Process.Pid
	defer zombie.Wait()
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(d.Dir, "z.sock")); return err == nil })
	zombie.Process.Signal(syscall.SIGKILL)
	waitFor(t, func() bool {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", zpid))
		return strings.Contains(string(st), ") Z ")
	})
	startWith("a zombie dockerd", zpid)

	// Another program with the pid.
	sleeper := exec.Command("sleep", "1000")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	startWith("another program", sleeper.Process.Pid)

	// kill -9 and at once a new daemon.
	d.Start(t)
	d.Kill(t)
	d.Start(t)

	// A live daemon keeps its pidfile: a second one refuses to start.
	second := exec.Command(dockerd, "--pidfile", pidfile, "-H", "unix://"+filepath.Join(d.Dir, "s.sock"),
		"--data-root", filepath.Join(d.Dir, "sroot"), "--exec-root", filepath.Join(d.Dir, "srun"), "--config-file", filepath.Join(d.Dir, "daemon.json"))
	done := make(chan []byte, 1)
	go func() { out, _ := second.CombinedOutput(); done <- out }()
	select {
	case out := <-done:
		if !strings.Contains(string(out), "pid file found, ensure docker is not running") {
			t.Errorf("second daemon beside a live one: %s", out)
		}
	case <-time.After(20 * time.Second):
		second.Process.Kill()
		<-done
		t.Error("a second daemon started beside a live one")
	}
	os.RemoveAll(filepath.Join(d.Dir, "sroot"))
	os.RemoveAll(filepath.Join(d.Dir, "srun"))
}

// docker info names the filesystem under the data root as Docker does.
func TestInfoBackingFilesystem(t *testing.T) {
	// The shared daemon's, on this machine's disk.
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(shared.Root, "graph"), &st); err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{unix.EXT4_SUPER_MAGIC: "extfs", unix.XFS_SUPER_MAGIC: "xfs", unix.BTRFS_SUPER_MAGIC: "btrfs",
		unix.TMPFS_MAGIC: "tmpfs", unix.OVERLAYFS_SUPER_MAGIC: "overlayfs"}[int64(st.Type)]
	if want == "" {
		want = "<unknown>"
	}
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		r := cli("info")
		if r.Code != 0 || !strings.Contains(r.Stdout, "Backing Filesystem: "+want+"\n") {
			t.Errorf("docker info: want Backing Filesystem: %s\n%s", want, r)
		}
	})

	// A daemon whose data root is a tmpfs.
	d := NewDaemon(t)
	if err := os.MkdirAll(d.Root, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", d.Root, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatal(err)
	}
	d.Start(t)
	r := d.CLI("info", "--format", "{{json .DriverStatus}}")
	d.Stop(t)
	if err := unix.Unmount(d.Root, unix.MNT_DETACH); err != nil {
		t.Error(err)
	}
	d.Cleanup(t)
	if !strings.Contains(r.Stdout, `["Backing Filesystem","tmpfs"]`) {
		t.Errorf("data root on tmpfs: %s", r)
	}
}
