//go:build integration

package integrationcli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/system"
)

// inspectAPI inspects a container through the API at the given version.
func inspectAPI(t *testing.T, version, id string) containertypes.InspectResponse {
	t.Helper()
	code, body := apiDo(t, "GET", "/v"+version+"/containers/"+id+"/json", "")
	if code != 200 {
		t.Fatalf("inspect %s: %d %s", id, code, body)
	}
	var ins containertypes.InspectResponse
	if err := json.Unmarshal([]byte(body), &ins); err != nil {
		t.Fatal(err)
	}
	return ins
}

// createAPI creates a container through the API at the given version.
func createAPI(t *testing.T, version, body string) string {
	t.Helper()
	code, out := apiDo(t, "POST", "/v"+version+"/containers/create", body)
	if code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	var resp containertypes.CreateResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.CLI("rm", "-f", resp.ID) })
	return resp.ID
}

// Binds are listed in Mounts as Docker lists them.
func TestInspectBindMounts(t *testing.T) {
	dir := t.TempDir()
	id := strings.TrimSpace(shared.MustCLI(t, "create", "-v", dir+":/a", "-v", dir+"/:/b/:ro", "-v", dir+":/c:ro,rslave", "busybox", "true"))
	defer shared.CLI("rm", "-f", id)
	got := inspectAPI(t, "1.51", id).Mounts
	want := []containertypes.MountPoint{
		{Type: "bind", Source: dir, Destination: "/a", Mode: "", RW: true, Propagation: "rprivate"},
		{Type: "bind", Source: dir, Destination: "/b", Mode: "ro", RW: false, Propagation: "rprivate"},
		{Type: "bind", Source: dir, Destination: "/c", Mode: "ro,rslave", RW: false, Propagation: "rslave"},
	}
	if len(got) != len(want) {
		t.Fatalf("Mounts: %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mount %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// No binds: an empty list, never null.
	id2 := strings.TrimSpace(shared.MustCLI(t, "create", "busybox", "true"))
	defer shared.CLI("rm", "-f", id2)
	if _, body := apiDo(t, "GET", "/v1.51/containers/"+id2+"/json", ""); !strings.Contains(body, `"Mounts":[]`) {
		t.Errorf("Mounts of a container without binds: %s", body)
	}
}

// host and none are networks of their own in NetworkSettings.Networks.
func TestInspectNetworksHostNone(t *testing.T) {
	for _, mode := range []string{"host", "none"} {
		id := createAPI(t, "1.51", `{"Image":"busybox","Cmd":["true"],"HostConfig":{"NetworkMode":"`+mode+`"}}`)
		nets := inspectAPI(t, "1.51", id).NetworkSettings.Networks
		if ep, ok := nets[mode]; !ok || ep == nil || len(nets) != 1 || ep.Aliases != nil {
			t.Errorf("%s: Networks %+v", mode, nets)
		}
	}
}

// The default IPC mode is "private", and "shareable" for clients older
// than API 1.40; a mode given is kept.
func TestInspectIpcModeDefault(t *testing.T) {
	for _, c := range []struct{ version, given, want string }{
		{"1.51", "", "private"},
		{"1.40", "", "private"},
		{"1.39", "", "shareable"},
		{"1.39", "private", "private"},
		{"1.51", "shareable", "shareable"},
	} {
		id := createAPI(t, c.version, `{"Image":"busybox","Cmd":["true"],"HostConfig":{"IpcMode":"`+c.given+`"}}`)
		if got := string(inspectAPI(t, "1.51", id).HostConfig.IpcMode); got != c.want {
			t.Errorf("API %s, IpcMode %q: inspect says %q, want %q", c.version, c.given, got, c.want)
		}
	}
}

func TestInfoSystemTime(t *testing.T) {
	code, body := apiDo(t, "GET", "/v1.51/info", "")
	var info system.Info
	if code != 200 || json.Unmarshal([]byte(body), &info) != nil || info.SystemTime == "" {
		t.Fatalf("info: %d %s", code, body)
	}
}

// ps -f before=X lists the containers created before X, since=X those
// created after it, X named by name or ID; an unknown X is an error.
func TestPsSinceBefore(t *testing.T) {
	var ids []string
	for i := 0; i < 3; i++ {
		id := strings.TrimSpace(shared.MustCLI(t, "create", "--name", fmt.Sprintf("sb-%d-%d", i, time.Now().UnixNano()), "busybox", "true"))
		defer shared.CLI("rm", "-f", id)
		ids = append(ids, id)
		time.Sleep(10 * time.Millisecond)
	}
	name := func(i int) string {
		return strings.TrimPrefix(inspectAPI(t, "1.51", ids[i]).Name, "/")
	}
	ps := func(filters ...string) []string {
		args := []string{"ps", "-aq", "--no-trunc"}
		for _, f := range filters {
			args = append(args, "-f", f)
		}
		var in []string
		for _, id := range strings.Fields(shared.MustCLI(t, args...)) {
			if slices.Contains(ids, id) {
				in = append(in, id)
			}
		}
		return in
	}
	for _, ref := range []string{ids[1], ids[1][:12], name(1)} {
		if got := ps("since=" + ref); !slices.Equal(got, []string{ids[2]}) {
			t.Errorf("since=%s: %v, want %v", ref, got, ids[2:3])
		}
		if got := ps("before=" + ref); !slices.Equal(got, []string{ids[0]}) {
			t.Errorf("before=%s: %v, want %v", ref, got, ids[0:1])
		}
	}
	if got := ps("since="+ids[0], "before="+ids[2]); !slices.Equal(got, []string{ids[1]}) {
		t.Errorf("since and before: %v, want %v", got, ids[1:2])
	}
	if r := shared.CLI("ps", "-a", "-f", "since=nosuchcontainer"); r.Code == 0 || !strings.Contains(r.Stderr, "No such container") {
		t.Errorf("since an unknown container: %s", r)
	}
	// Without -a only running containers are listed, as always.
	for _, id := range strings.Fields(shared.MustCLI(t, "ps", "-q", "--no-trunc", "-f", "since="+ids[0])) {
		if slices.Contains(ids, id) {
			t.Errorf("ps -q since lists a created container without -a: %s", id)
		}
	}
}
