//go:build integration

package integrationcli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	containertypes "github.com/docker/docker/api/types/container"
)

// runInPty runs a CLI inside a real terminal of the given size.
func runInPty(t *testing.T, bin string, rows, cols uint16, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+shared.Host())
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, f); close(done) }()
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Errorf("%s %v: %v", bin, args, err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s %v hung; output %q", bin, args, out.String())
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return out.String()
}

func TestTTYWindowSize(t *testing.T) {
	for _, bin := range []string{ourCLI, stockCLI} {
		out := runInPty(t, bin, 31, 97, "run", "--rm", "-it", "busybox", "sh", "-c", "stty size; tty")
		if !strings.Contains(out, "31 97") || !strings.Contains(out, "/dev/pts/0") {
			t.Errorf("%s run -it: %q", bin, out)
		}
	}
	id := remember(shared.MustCLI(t, "run", "-d", "busybox", "sleep", "1000"))
	defer shared.CLI("rm", "-f", id)
	out := runInPty(t, ourCLI, 22, 66, "exec", "-it", id, "stty", "size")
	if !strings.Contains(out, "22 66") {
		t.Errorf("exec -it: %q", out)
	}
}

// Through the Go SDK: a tty container's size comes from ConsoleSize, and
// a resize reaches it.
func TestTTYResizeThroughAPI(t *testing.T) {
	ctx := context.Background()
	c := shared.Client(t)
	resp, err := c.ContainerCreate(ctx, &containertypes.Config{
		Image: "busybox", Tty: true, OpenStdin: true,
		Cmd: []string{"sh", "-c", "stty size; read x; stty size"},
	}, &containertypes.HostConfig{ConsoleSize: [2]uint{40, 120}}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	remember(resp.ID)
	defer c.ContainerRemove(ctx, resp.ID, containertypes.RemoveOptions{Force: true})
	hj, err := c.ContainerAttach(ctx, resp.ID, containertypes.AttachOptions{Stream: true, Stdin: true, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer hj.Close()
	if err := c.ContainerStart(ctx, resp.ID, containertypes.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, hj.Reader); close(done) }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "40 120") })
	if err := c.ContainerResize(ctx, resp.ID, containertypes.ResizeOptions{Height: 50, Width: 150}); err != nil {
		t.Fatal(err)
	}
	hj.Conn.Write([]byte("\n"))
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("attach did not end")
	}
	if !strings.Contains(out.String(), "50 150") {
		t.Fatalf("after resize: %q", out.String())
	}
}
