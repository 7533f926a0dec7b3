package daemon

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

func TestCheckPassable(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sock, err := l.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	reg, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if err := checkPassable([]*os.File{r, w, sock, reg}); err != nil {
		t.Fatalf("pipes, a socket and a file refused: %v", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	null, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	pfd, err := unix.Open(filepath.Join(dir, "f"), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	opath := os.NewFile(uintptr(pfd), "opath")
	defer opath.Close()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	ev := os.NewFile(uintptr(efd), "eventfd")
	defer ev.Close()
	for _, c := range []struct {
		f    *os.File
		want string
	}{
		{d, "descriptor 4 is a directory"},
		{null, "descriptor 4 is a character device"},
		{opath, "descriptor 4 is an O_PATH handle"},
		{ev, "descriptor 4 is an anonymous kernel object"},
	} {
		err := checkPassable([]*os.File{r, c.f})
		if err == nil || !strings.Contains(err.Error(), c.want) || errdefs.ClassOf(err) != errdefs.ClassInvalidParameter {
			t.Errorf("%s: %v, want an invalid parameter %q", c.f.Name(), err, c.want)
		}
	}
}

func TestApplyPassedFiles(t *testing.T) {
	newSpec := func(pidPath string) *specs.Spec {
		return &specs.Spec{
			Process: &specs.Process{Env: []string{"PATH=/bin", "LISTEN_FDS=9", "LISTEN_PID=77"}},
			Linux:   &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace, Path: pidPath}}},
		}
	}
	c := &container.Container{HostConfig: &containertypes.HostConfig{}}
	files := &fdpass.Files{Request: fdpass.Request{Files: 3, Listen: 2, Names: []string{"a", "b"}}}

	s := newSpec("")
	if err := applyPassedFiles(c, s, files); err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/bin", "LISTEN_FDS=2", "LISTEN_PID=1", "LISTEN_FDNAMES=a:b"}
	if !slices.Equal(s.Process.Env, want) {
		t.Errorf("env %q, want %q", s.Process.Env, want)
	}
	// --preserve-fds alone changes no environment.
	s = newSpec("/proc/1/ns/pid")
	if err := applyPassedFiles(c, s, &fdpass.Files{Request: fdpass.Request{Files: 1}}); err != nil || len(s.Process.Env) != 3 {
		t.Errorf("preserve-fds only: %v %q", err, s.Process.Env)
	}
	// LISTEN_PID=1 would not name the process: refused.
	if err := applyPassedFiles(c, newSpec("/proc/1/ns/pid"), files); errdefs.ClassOf(err) != errdefs.ClassInvalidParameter {
		t.Errorf("shared pid namespace: %v", err)
	}
	yes := true
	withInit := &container.Container{HostConfig: &containertypes.HostConfig{Init: &yes}}
	if err := applyPassedFiles(withInit, newSpec(""), files); errdefs.ClassOf(err) != errdefs.ClassInvalidParameter {
		t.Errorf("--init: %v", err)
	}
}
