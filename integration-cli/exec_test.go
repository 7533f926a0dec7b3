//go:build integration

package integrationcli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// The test image's users and groups are the official busybox image's; a
// process has its primary group, the user's groups (for a user given without
// a group) and --group-add among its supplementary groups, in run and exec.
func TestUsersAndGroupAdd(t *testing.T) {
	id := remember(shared.MustCLI(t, "run", "-d", "-u", "root:root", "--group-add", "staff", "--group-add", "wheel",
		"--group-add", "audio", "--group-add", "777", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		const want = "uid=0(root) gid=0(root) groups=0(root),10(wheel),29(audio),50(staff),777\n"
		if r := cli("exec", id, "id"); r.Code != 0 || r.Stdout != want {
			t.Errorf("exec keeps --group-add: want %q, got %s", want, r)
		}
		if r := cli("run", "--rm", "--group-add", "audio", "busybox", "id"); r.Stdout != "uid=0(root) gid=0(root) groups=0(root),10(wheel),29(audio)\n" {
			t.Errorf("run --group-add: %s", r)
		}
		if r := cli("run", "--rm", "-u", "daemon", "busybox", "id"); r.Stdout != "uid=1(daemon) gid=1(daemon) groups=1(daemon)\n" {
			t.Errorf("run -u daemon: %s", r)
		}
		if r := cli("run", "--rm", "--group-add", "no-such-group", "busybox", "true"); r.Code == 0 || !strings.Contains(r.Stderr, "Unable to find group no-such-group") {
			t.Errorf("unknown --group-add: %s", r)
		}
	})
}

// An exec's console size from its create request applies at start, and the
// stream's framing follows the start request's Tty, not the exec's: a
// client may read a terminal's output in stdcopy frames.
func TestExecConsoleSizeAndFraming(t *testing.T) {
	ctx := context.Background()
	c := shared.Client(t)
	defer c.Close()
	id := remember(shared.MustCLI(t, "run", "-d", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	for _, framed := range []bool{true, false} {
		ex, err := c.ContainerExecCreate(ctx, id, containertypes.ExecOptions{
			AttachStdout: true, AttachStderr: true, Tty: true, ConsoleSize: &[2]uint{57, 123},
			Cmd: []string{"stty", "size"},
		})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.ContainerExecAttach(ctx, ex.ID, containertypes.ExecAttachOptions{Tty: !framed})
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if framed {
			_, err = stdcopy.StdCopy(&out, &errOut, resp.Reader)
		} else {
			_, err = out.ReadFrom(resp.Reader)
		}
		resp.Close()
		if err != nil || strings.TrimSpace(out.String()) != "57 123" || errOut.Len() != 0 {
			t.Errorf("framed=%v: stdout %q stderr %q err %v", framed, out.String(), errOut.String(), err)
		}
	}
}

// Docker's answers to a resize with a bad size, for containers and execs.
func TestResizeBadSize(t *testing.T) {
	c := shared.Client(t)
	defer c.Close()
	id := remember(shared.MustCLI(t, "run", "-d", "-t", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	ex, err := c.ContainerExecCreate(context.Background(), id, containertypes.ExecOptions{Tty: true, Cmd: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ContainerExecStart(context.Background(), ex.ID, containertypes.ExecStartOptions{Detach: true, Tty: true}); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ query, want string }{
		{"w=100", `invalid resize height "": invalid syntax`},
		{"h=x&w=100", `invalid resize height "x": invalid syntax`},
		{"h=100&w=-1", `invalid resize width "-1": value out of range`},
		{"h=4294967296&w=100", `invalid resize height "4294967296": value out of range`},
	}
	for _, path := range []string{"/containers/" + id + "/resize", "/exec/" + ex.ID + "/resize"} {
		for _, tc := range cases {
			req, err := http.NewRequest(http.MethodPost, "http://docker/v1.51"+path+"?"+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Message string }
			err = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusBadRequest || body.Message != tc.want {
				t.Errorf("%s?%s: %d %q %v, want 400 %q", path, tc.query, res.StatusCode, body.Message, err, tc.want)
			}
		}
	}
	good := containertypes.ResizeOptions{Height: 40, Width: 40}
	if err := c.ContainerResize(context.Background(), id, good); err != nil {
		t.Errorf("resize: %v", err)
	}
	if err := c.ContainerExecResize(context.Background(), ex.ID, good); err != nil {
		t.Errorf("exec resize: %v", err)
	}
}
