//go:build integration

package integrationcli

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// refusedCreate is a create body Docker refuses, with Docker's status and
// a part of its message (moby's integration/container/create_test.go).
type refusedCreate struct {
	name, body string
	status     int
	want       string
}

// Create refuses what Docker refuses, with Docker's status and message,
// and leaves nothing behind.
func TestCreateRefusedAsDocker(t *testing.T) {
	cases := []refusedCreate{
		{"env empty", `{"Image":"busybox","Env":[""]}`, 400, "invalid environment variable: "},
		{"env =", `{"Image":"busybox","Env":["="]}`, 400, "invalid environment variable: ="},
		{"env =foo", `{"Image":"busybox","Env":["A=1","=foo"]}`, 400, "invalid environment variable: =foo"},
		{"tmpfs .", `{"Image":"busybox","HostConfig":{"Tmpfs":{".":""}}}`, 400, "invalid mount path: '.' mount path must be absolute"},
		{"tmpfs foo", `{"Image":"busybox","HostConfig":{"Tmpfs":{"foo":""}}}`, 400, "invalid mount path: 'foo' mount path must be absolute"},
		{"tmpfs /", `{"Image":"busybox","HostConfig":{"Tmpfs":{"/":""}}}`, 400, "invalid specification: destination can't be '/'"},
		{"tmpfs //", `{"Image":"busybox","HostConfig":{"Tmpfs":{"//":""}}}`, 400, "invalid specification: destination can't be '/'"},
		{"workdir relative", `{"Image":"busybox","WorkingDir":"tmp"}`, 400, "the working directory 'tmp' is invalid, it needs to be an absolute path"},
		{"health interval negative", `{"Image":"busybox","Healthcheck":{"Interval":-10000000,"Timeout":1000000000,"Retries":1000}}`, 400, "Interval in Healthcheck cannot be less than 1ms"},
		{"health interval 500us", `{"Image":"busybox","Healthcheck":{"Interval":500000,"Timeout":1000000000,"Retries":1000}}`, 400, "Interval in Healthcheck cannot be less than 1ms"},
		{"health timeout negative", `{"Image":"busybox","Healthcheck":{"Interval":1000000000,"Timeout":-100000000,"Retries":1000}}`, 400, "Timeout in Healthcheck cannot be less than 1ms"},
		{"health retries negative", `{"Image":"busybox","Healthcheck":{"Interval":1000000000,"Timeout":1000000000,"Retries":-10}}`, 400, "Retries in Healthcheck cannot be negative"},
		{"health start period", `{"Image":"busybox","Healthcheck":{"Interval":1000000000,"Timeout":1000000000,"Retries":1000,"StartPeriod":100000}}`, 400, "StartPeriod in Healthcheck cannot be less than 1ms"},
		{"link to a missing container", `{"Image":"busybox","HostConfig":{"Links":["no-such-container"]}}`, 400, "could not get container for no-such-container: No such container: no-such-container"},
		{"link with an alias to a missing container", `{"Image":"busybox","HostConfig":{"Links":["no-such-container:alias"]}}`, 400, "could not get container for no-such-container"},
		{"link malformed", `{"Image":"busybox","HostConfig":{"Links":["a:b:c"]}}`, 400, "bad format for links: a:b:c"},
		{"pid mode invalid", `{"Image":"busybox","HostConfig":{"PidMode":"invalid"}}`, 400, "invalid PID mode: invalid"},
		{"pid mode container without one", `{"Image":"busybox","HostConfig":{"PidMode":"container"}}`, 400, "invalid PID mode: container"},
		{"pid mode of a missing container", `{"Image":"busybox","HostConfig":{"PidMode":"container:nosuchcontainer"}}`, 400, "No such container: nosuchcontainer"},
		{"ipc mode invalid", `{"Image":"busybox","HostConfig":{"IpcMode":"invalid"}}`, 400, "invalid IPC mode: invalid"},
		{"uts mode invalid", `{"Image":"busybox","HostConfig":{"UTSMode":"container:x"}}`, 400, "invalid UTS mode: container:x"},
		{"uts host with a hostname", `{"Image":"busybox","Hostname":"h","HostConfig":{"UTSMode":"host"}}`, 400, "conflicting options: hostname and the UTS mode"},
		{"shm size negative", `{"Image":"busybox","HostConfig":{"ShmSize":-1}}`, 400, "SHM size can not be less than 0"},
		{"cgroupns unknown", `{"Image":"busybox","HostConfig":{"CgroupnsMode":"invalid"}}`, 400, "invalid cgroup namespace mode: invalid"},
		{"cgroupns host", `{"Image":"busybox","HostConfig":{"CgroupnsMode":"host"}}`, 501, `cgroup namespace mode "host" is not implemented by this engine`},
		{"health start interval", `{"Image":"busybox","Healthcheck":{"Interval":1000000000,"Timeout":1000000000,"Retries":1000,"StartPeriod":1000000000,"StartInterval":100000}}`, 400, "StartInterval in Healthcheck cannot be less than 1ms"},
	}
	before := allIDs(t)
	for _, c := range cases {
		status, resp := apiDo(t, "POST", "/v1.51/containers/create", c.body)
		var msg struct{ Message string }
		json.Unmarshal([]byte(resp), &msg)
		if status != c.status || !strings.Contains(msg.Message, c.want) {
			t.Errorf("%s: %s: got %d %s; want %d containing %q", c.name, c.body, status, resp, c.status, c.want)
		}
	}
	if after := allIDs(t); !slices.Equal(before, after) {
		t.Errorf("docker ps -a changed: before %v, after %v", before, after)
	}
}

// createOK creates a container through the API and returns its ID and
// the create response's warnings.
func createOK(t *testing.T, body string) (string, []string) {
	t.Helper()
	status, resp := apiDo(t, "POST", "/v1.51/containers/create", body)
	var r struct {
		ID       string
		Warnings []string
	}
	json.Unmarshal([]byte(resp), &r)
	if status != 201 || r.ID == "" {
		t.Fatalf("create %s: got %d %s; want 201", body, status, resp)
	}
	remember(r.ID)
	t.Cleanup(func() { apiDo(t, "DELETE", "/v1.51/containers/"+r.ID+"?force=1", "") })
	return r.ID, r.Warnings
}

func inspectConfig(t *testing.T, id string) (cfg struct {
	WorkingDir  string
	Cmd         []string
	Healthcheck *struct{ Test []string }
}) {
	t.Helper()
	status, resp := apiDo(t, "GET", "/v1.51/containers/"+id+"/json", "")
	var r struct{ Config json.RawMessage }
	if err := json.Unmarshal([]byte(resp), &r); status != 200 || err != nil {
		t.Fatalf("inspect %s: %d %s", id, status, resp)
	}
	json.Unmarshal(r.Config, &cfg)
	return cfg
}

// What Docker accepts, we accept: Cmd [""] (which fails at start, as in
// Docker), a working directory with a trailing slash (recorded cleaned),
// a valid health check (recorded, with a warning that it is not run).
func TestCreateAcceptedAsDocker(t *testing.T) {
	t.Run("cmd empty string", func(t *testing.T) {
		id, _ := createOK(t, `{"Image":"busybox","Cmd":[""]}`)
		if cfg := inspectConfig(t, id); !slices.Equal(cfg.Cmd, []string{""}) {
			t.Errorf("Cmd: got %q", cfg.Cmd)
		}
		if status, resp := apiDo(t, "POST", "/v1.51/containers/"+id+"/start", ""); status < 400 || status == 500 {
			t.Errorf("start of Cmd [\"\"]: got %d %s; want a 4xx", status, resp)
		}
	})
	t.Run("cgroupns private", func(t *testing.T) {
		createOK(t, `{"Image":"busybox","Cmd":["true"],"HostConfig":{"CgroupnsMode":"private"}}`)
	})
	t.Run("workdir cleaned", func(t *testing.T) {
		id, _ := createOK(t, `{"Image":"busybox","Cmd":["pwd"],"WorkingDir":"/tmp/"}`)
		if cfg := inspectConfig(t, id); cfg.WorkingDir != "/tmp" {
			t.Errorf("WorkingDir: got %q; want /tmp", cfg.WorkingDir)
		}
		r := shared.MustCLI(t, "start", "-a", id)
		if strings.TrimSpace(r) != "/tmp" {
			t.Errorf("pwd: got %q; want /tmp", r)
		}
	})
	t.Run("healthcheck valid", func(t *testing.T) {
		id, warnings := createOK(t, `{"Image":"busybox","Cmd":["true"],"Healthcheck":{"Test":["CMD","true"],"Interval":1000000000,"Retries":3}}`)
		if len(warnings) != 0 {
			t.Errorf("warnings: got %q; want none (health checks run)", warnings)
		}
		if cfg := inspectConfig(t, id); cfg.Healthcheck == nil || !slices.Equal(cfg.Healthcheck.Test, []string{"CMD", "true"}) {
			t.Errorf("Healthcheck not recorded: %+v", cfg.Healthcheck)
		}
		_, warnings = createOK(t, `{"Image":"busybox","Cmd":["true"],"Healthcheck":{"Test":["NONE"]}}`)
		if len(warnings) != 0 {
			t.Errorf("HEALTHCHECK NONE: warnings %q", warnings)
		}
	})
}

// --pid container: of an existing container is created, as in Docker,
// even if that container does not run: the start says so (500).
func TestCreatePidContainerNotRunning(t *testing.T) {
	other, _ := createOK(t, `{"Image":"busybox","Cmd":["true"]}`)
	id, _ := createOK(t, `{"Image":"busybox","Cmd":["true"],"HostConfig":{"PidMode":"container:`+other+`"}}`)
	status, resp := apiDo(t, "POST", "/v1.51/containers/"+id+"/start", "")
	if want := "failed to join PID namespace: container " + other + " is not running"; status != 500 || !strings.Contains(resp, want) {
		t.Errorf("start with the PID namespace of a stopped container: got %d %s; want 500 %q", status, resp, want)
	}
}

// A bind of the data root (or of a directory in it) must be rslave or
// rshared, as in Docker: without a propagation it is made rslave, any
// other is refused (moby's TestMountDaemonRoot).
func TestCreateBindDataRoot(t *testing.T) {
	_, resp := apiDo(t, "GET", "/v1.51/info", "")
	var info struct{ DockerRootDir string }
	if err := json.Unmarshal([]byte(resp), &info); err != nil || info.DockerRootDir == "" {
		t.Fatalf("info: %v %s", err, resp)
	}
	before := allIDs(t)
	for _, src := range []string{info.DockerRootDir, info.DockerRootDir + "/containers"} {
		for _, p := range []string{"private", "rprivate", "slave", "shared"} {
			body := `{"Image":"busybox","Cmd":["true"],"HostConfig":{"Binds":["` + src + `:/foo:` + p + `"]}}`
			status, resp := apiDo(t, "POST", "/v1.51/containers/create", body)
			want := `invalid mount config: must use either propagation mode \"rslave\" or \"rshared\" when mount source is within the daemon root`
			if status != 400 || !strings.Contains(resp, want) {
				t.Errorf("%s: got %d %s; want 400 containing %s", body, status, resp, want)
			}
		}
	}
	if after := allIDs(t); !slices.Equal(before, after) {
		t.Errorf("docker ps -a changed: before %v, after %v", before, after)
	}
	for _, p := range []string{"", ":rslave", ":rshared"} {
		createOK(t, `{"Image":"busybox","Cmd":["true"],"HostConfig":{"Binds":["`+info.DockerRootDir+`:/foo`+p+`"]}}`)
	}
	// The default (rslave) starts: the bind is there.
	id, _ := createOK(t, `{"Image":"busybox","Cmd":["grep"," /foo ","/proc/self/mountinfo"],"HostConfig":{"Binds":["`+info.DockerRootDir+`/containers:/foo"]}}`)
	if out := shared.MustCLI(t, "start", "-a", id); !strings.Contains(out, "/containers /foo ") {
		t.Errorf("/foo is not the bind of the data root's containers: %q", out)
	}
}

// ?platform= that the image does not provide is a 404 as in Docker
// (moby's TestCreateDifferentPlatform); the image's own platform is
// accepted; a malformed one is a 400.
func TestCreatePlatform(t *testing.T) {
	_, resp := apiDo(t, "GET", "/v1.51/images/busybox:latest/json", "")
	var img struct{ Os, Architecture, Variant string }
	if err := json.Unmarshal([]byte(resp), &img); err != nil || img.Os == "" || img.Architecture == "" {
		t.Fatalf("image inspect: %v %s", err, resp)
	}
	plat := func(os, arch string) string {
		p := os + "/" + arch
		if img.Variant != "" {
			p += "/" + img.Variant
		}
		return url.QueryEscape(p)
	}
	before := allIDs(t)
	for _, c := range []struct {
		platform string
		status   int
		want     string
	}{
		{plat(img.Os+"DifferentOS", img.Architecture), 404, "image with reference busybox:latest was found but its platform"},
		{plat(img.Os, img.Architecture+"DifferentArch"), 404, "does not match the specified platform"},
		{"linux%2Famd64%2Fx%2Fy", 400, "cannot parse platform specifier"},
	} {
		status, resp := apiDo(t, "POST", "/v1.51/containers/create?platform="+c.platform, `{"Image":"busybox:latest"}`)
		if status != c.status || !strings.Contains(resp, c.want) {
			t.Errorf("platform %s: got %d %s; want %d containing %q", c.platform, status, resp, c.status, c.want)
		}
	}
	if after := allIDs(t); !slices.Equal(before, after) {
		t.Errorf("docker ps -a changed: before %v, after %v", before, after)
	}
	status, resp := apiDo(t, "POST", "/v1.51/containers/create?platform="+plat(img.Os, img.Architecture), `{"Image":"busybox:latest","Cmd":["true"]}`)
	var r struct{ ID string }
	json.Unmarshal([]byte(resp), &r)
	if status != 201 {
		t.Fatalf("create with the image's own platform: %d %s", status, resp)
	}
	remember(r.ID)
	apiDo(t, "DELETE", "/v1.51/containers/"+r.ID+"?force=1", "")
}
