package opts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseEnvFile(t *testing.T) {
	t.Setenv("FROM_ENV", "env value")
	os.Unsetenv("NOT_IN_ENV_XYZ")
	p := writeFile(t, "\xEF\xBB\xBFFIRST=1\n# comment\n   \n  INDENTED=x\nQUOTED=\"kept\" \nEMPTY=\nFROM_ENV\nNOT_IN_ENV_XYZ\nEQ=a=b\n\t# indented comment\n")
	got, err := ParseEnvFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"FIRST=1", "INDENTED=x", `QUOTED="kept" `, "EMPTY=", "FROM_ENV=env value", "EQ=a=b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestParseEnvFileErrors(t *testing.T) {
	for name, content := range map[string]string{
		"space in name": "BAD NAME=1\n",
		"no name":       "=value\n",
		"invalid utf8":  "A=\xff\xfe\n",
	} {
		_, err := ParseEnvFile(writeFile(t, content))
		if err == nil || !errdefs.IsInvalidParameter(err) {
			t.Errorf("%s: want invalid parameter, got %v", name, err)
		}
	}
	if _, err := ParseEnvFile("/nonexistent/env"); err == nil {
		t.Error("missing file: want error")
	}
}

func TestValidateEnvAndBuildEnv(t *testing.T) {
	t.Setenv("CLI_VAR", "v")
	os.Unsetenv("CLI_UNSET_XYZ")
	cases := map[string]string{"A=1": "A=1", "CLI_VAR": "CLI_VAR=v", "CLI_UNSET_XYZ": "CLI_UNSET_XYZ", "B=": "B="}
	for in, want := range cases {
		got, err := ValidateEnv(in)
		if err != nil || got != want {
			t.Errorf("ValidateEnv(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ValidateEnv("=x"); err == nil {
		t.Error("empty key: want error")
	}
	env, err := BuildEnv([]string{writeFile(t, "A=file\nB=file\n")}, []string{"A=cli"})
	if err != nil {
		t.Fatal(err)
	}
	// -e values come after the file so they win.
	if want := []string{"A=file", "B=file", "A=cli"}; !reflect.DeepEqual(env, want) {
		t.Fatalf("got %q want %q", env, want)
	}
}

func TestLabels(t *testing.T) {
	os.Setenv("LBL_BARE", "ignored") // label files have no env fallback
	defer os.Unsetenv("LBL_BARE")
	got, err := BuildLabels([]string{writeFile(t, "f=1\nLBL_BARE\nshared=file\n")}, []string{"a=b", "flag", "shared=cli", "x=y=z"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"f": "1", "a": "b", "flag": "", "shared": "cli", "x": "y=z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if _, err := BuildLabels(nil, []string{"=v"}); err == nil {
		t.Error("empty label name: want error")
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "64m": 64 << 20, "1g": 1 << 30, "512k": 512 << 10, "1048576": 1 << 20, "1.5g": 3 << 29} {
		got, err := ParseMemory(in)
		if err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"lots", "-1m", "1x"} {
		if _, err := ParseMemory(bad); err == nil {
			t.Errorf("ParseMemory(%q): want error", bad)
		}
	}
}

func TestParseMemorySwap(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "-1": -1, "128m": 128 << 20, "0": 0} {
		got, err := ParseMemorySwap(in)
		if err != nil || got != want {
			t.Errorf("ParseMemorySwap(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"-5", "-1m", "much"} {
		if _, err := ParseMemorySwap(bad); err == nil {
			t.Errorf("ParseMemorySwap(%q): want error", bad)
		}
	}
}

func TestParseCPUs(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1": 1e9, "0.5": 5e8, "1.5": 15e8, "0.000000001": 1, "2/4": 5e8} {
		got, err := ParseCPUs(in)
		if err != nil || got != want {
			t.Errorf("ParseCPUs(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"abc", "0.0000000001", "-1"} {
		if _, err := ParseCPUs(bad); err == nil {
			t.Errorf("ParseCPUs(%q): want error", bad)
		}
	}
}

func TestParseFilters(t *testing.T) {
	f, err := ParseFilters([]string{"name=web", "Status=exited", "label=a=b", "label=c"})
	if err != nil {
		t.Fatal(err)
	}
	if !f.ExactMatch("name", "web") || !f.ExactMatch("status", "exited") {
		t.Fatalf("filters: %v", f)
	}
	if got := f.Get("label"); len(got) != 2 {
		t.Fatalf("labels: %v", got)
	}
	if _, err := ParseFilters([]string{"novalue"}); err == nil || err.Error() != "bad format of filter (expected name=value)" {
		t.Fatalf("want docker's bad format error, got %v", err)
	}
}

func TestInitOption(t *testing.T) {
	cases := []struct {
		args     []string
		hostInit *bool
		cfgInit  string
		rest     []string
	}{
		{nil, nil, "", nil},
		{[]string{"--init"}, ptr(true), "", nil},
		{[]string{"--init", "busybox"}, ptr(true), "", []string{"busybox"}},
		{[]string{"--init=systemd"}, nil, "systemd", nil},
		{[]string{"--init=false"}, ptr(false), "", nil},
		{[]string{"--init=true"}, ptr(true), "", nil},
	}
	for _, c := range cases {
		var o InitOption
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.Var(&o, "init", "")
		fs.Lookup("init").NoOptDefVal = InitFlagNoOptDefVal
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := o.HostConfigInit(); !reflect.DeepEqual(got, c.hostInit) {
			t.Errorf("%v: HostConfigInit = %v want %v", c.args, got, c.hostInit)
		}
		if got := o.ConfigInit(); got != c.cfgInit {
			t.Errorf("%v: ConfigInit = %q want %q", c.args, got, c.cfgInit)
		}
		if !reflect.DeepEqual(fs.Args(), c.rest) && len(fs.Args())+len(c.rest) > 0 {
			t.Errorf("%v: rest = %v want %v", c.args, fs.Args(), c.rest)
		}
	}
	var o InitOption
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Var(&o, "init", "")
	if err := fs.Parse([]string{"--init=tini"}); err == nil {
		t.Error("--init=tini: want error")
	}
}

func ptr[T any](v T) *T { return &v }

func TestCreateRequestJSON(t *testing.T) {
	req := CreateRequest{
		ContainerConfig: &ContainerConfig{Config: container.Config{Image: "img", Cmd: []string{"sh"}}, Init: InitSystemd},
		HostConfig:      &container.HostConfig{Init: ptr(false), Resources: container.Resources{Memory: 1}},
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// The create body is flat: Config fields (Init included) at the top.
	if m["Image"] != "img" || m["Init"] != "systemd" {
		t.Fatalf("body %s", b)
	}
	if hc, _ := m["HostConfig"].(map[string]any); hc["Init"] != false {
		t.Fatalf("HostConfig.Init missing: %s", b)
	}
	// And it decodes back, which is what a daemon needs.
	var back CreateRequest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Init != InitSystemd || back.Image != "img" || back.HostConfig.Memory != 1 {
		t.Fatalf("round trip: %+v", back)
	}
	b, _ = json.Marshal(ContainerConfig{Config: container.Config{Image: "x"}})
	if strings.Contains(string(b), `"Init"`) {
		t.Fatalf("empty Init must be omitted: %s", b)
	}
}

func TestParseVolumes(t *testing.T) {
	binds, vols, err := ParseVolumes([]string{"/h:/c", "/h2:/c2:ro", "/anon"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(binds, []string{"/h:/c", "/h2:/c2:ro"}) {
		t.Fatalf("binds %v", binds)
	}
	if _, ok := vols["/anon"]; !ok || len(vols) != 1 {
		t.Fatalf("volumes %v", vols)
	}
	for _, bad := range []string{"rel", "/h:rel", "a:b:c:d", ":/c"} {
		if _, _, err := ParseVolumes([]string{bad}); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestParseRestartTmpfsUlimits(t *testing.T) {
	p, err := ParseRestartPolicy("on-failure:3")
	if err != nil || p.Name != container.RestartPolicyOnFailure || p.MaximumRetryCount != 3 {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{"sometimes", "always:2", "on-failure:x"} {
		if _, err := ParseRestartPolicy(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
	tm, err := ParseTmpfs([]string{"/run", "/tmp:size=1m,noexec"})
	if err != nil || tm["/run"] != "" || tm["/tmp"] != "size=1m,noexec" {
		t.Fatalf("%v %v", tm, err)
	}
	if _, err := ParseTmpfs([]string{"rel"}); err == nil {
		t.Error("relative tmpfs: want error")
	}
	u, err := ParseUlimits([]string{"nofile=1024:2048"})
	if err != nil || u[0].Name != "nofile" || u[0].Soft != 1024 || u[0].Hard != 2048 {
		t.Fatalf("%v %v", u, err)
	}
}

func TestParseSecurityOpts(t *testing.T) {
	prof := writeFile(t, "{\n  \"defaultAction\": \"SCMP_ACT_ALLOW\"\n}\n")
	got, err := ParseSecurityOpts([]string{"no-new-privileges", "writable-cgroups", "seccomp=unconfined", "seccomp=" + prof, "label:disable"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"no-new-privileges", "writable-cgroups", "seccomp=unconfined", `seccomp={"defaultAction":"SCMP_ACT_ALLOW"}`, "label=disable"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
	if _, err := ParseSecurityOpts([]string{"seccomp=/nonexistent.json"}); err == nil {
		t.Error("missing profile: want error")
	}
}

func TestKeyValueOpts(t *testing.T) {
	m, err := ParseKeyValueOpts([]string{"max-size=10m", "max-file=3"}, "log-opt")
	if err != nil || m["max-size"] != "10m" || m["max-file"] != "3" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := ParseKeyValueOpts([]string{"bare"}, "log-opt"); err == nil {
		t.Error("want error")
	}
}

func TestParseDevices(t *testing.T) {
	for in, want := range map[string]container.DeviceMapping{
		"/dev/null":                 {PathOnHost: "/dev/null", PathInContainer: "/dev/null", CgroupPermissions: "rwm"},
		"/dev/null:/dev/xnull":      {PathOnHost: "/dev/null", PathInContainer: "/dev/xnull", CgroupPermissions: "rwm"},
		"/dev/zero:r":               {PathOnHost: "/dev/zero", PathInContainer: "/dev/zero", CgroupPermissions: "r"},
		"/dev/zero:/dev/z:rw":       {PathOnHost: "/dev/zero", PathInContainer: "/dev/z", CgroupPermissions: "rw"},
		"/dev/zero:/dev/./z/":       {PathOnHost: "/dev/zero", PathInContainer: "/dev/z", CgroupPermissions: "rwm"},
		"/dev/snd:/dev/snd:mrw":     {PathOnHost: "/dev/snd", PathInContainer: "/dev/snd", CgroupPermissions: "mrw"},
		"relative/host:/dev/inside": {PathOnHost: "relative/host", PathInContainer: "/dev/inside", CgroupPermissions: "rwm"},
	} {
		got, err := ParseDevices([]string{in})
		if err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("ParseDevices(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	// The docker CLI's words.
	for in, want := range map[string]string{
		"":                     "bad format for path: ",
		":/dev/x":              "bad format for path: :/dev/x",
		"/a:/b:r:w":            "bad format for path: /a:/b:r:w",
		"/dev/null:/dev/x:rwx": "bad mode specified: rwx",
		"/dev/null:/dev/x:":    "bad mode specified: ",
		"/dev/null:relative":   "relative is not an absolute path",
		"relative":             "relative is not an absolute path",
		"/dev/null:rr":         "rr is not an absolute path",
		"/dev/null::rw":        " is not an absolute path",
	} {
		_, err := ParseDevices([]string{in})
		if err == nil || !strings.Contains(err.Error(), `invalid argument "`+in+`" for "--device" flag: `+want) {
			t.Errorf("ParseDevices(%q): %v; want %q", in, err, want)
		}
	}
}

func TestParseUlimitsWordsTheFlag(t *testing.T) {
	_, err := ParseUlimits([]string{"nofile=1", "nosuch=1"})
	if err == nil || err.Error() != `invalid argument "nosuch=1" for "--ulimit" flag: invalid ulimit type: nosuch` {
		t.Fatalf("got %v", err)
	}
}
