//go:build integration

package integrationcli

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tarNames lists the entries of the tar file at path.
func tarNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		names[strings.TrimPrefix(h.Name, "./")] = true
	}
}

// rootfsMounted reports whether the container's rootfs (its overlay
// merged directory) is mounted on the host.
func rootfsMounted(t *testing.T, d *Daemon, id string) bool {
	t.Helper()
	merged := d.MustCLI(t, "inspect", "-f", "{{.GraphDriver.Data.MergedDir}}", id)
	if merged == "" {
		t.Fatalf("inspect shows no MergedDir for %s", id)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == merged {
			return true
		}
	}
	return false
}

// docker export of a stopped container (mounted for the export, unmounted
// after) and of a running one (left running, rootfs left mounted), with
// both CLIs; a missing container is a 404.
func TestExport(t *testing.T) {
	d := shared
	dir := t.TempDir()
	stopped := remember(d.MustCLI(t, "run", "-d", "busybox", "sh", "-c", "echo hi > /exported"))
	defer d.CLI("rm", "-f", stopped)
	d.MustCLI(t, "wait", stopped)
	if rootfsMounted(t, d, stopped) {
		t.Fatal("a stopped container's rootfs is mounted before the export")
	}

	for i, cli := range []func(...string) Result{d.CLI, d.Stock} {
		out := filepath.Join(dir, "stopped"+string(rune('0'+i))+".tar")
		if r := cli("export", "-o", out, stopped); r.Code != 0 {
			t.Fatalf("export of a stopped container: %s", r)
		}
		names := tarNames(t, out)
		if !names["exported"] || !names["bin/busybox"] {
			t.Errorf("export of a stopped container lacks its files (%d entries)", len(names))
		}
	}
	if rootfsMounted(t, d, stopped) {
		t.Error("the export left the stopped container's rootfs mounted")
	}

	running := remember(d.MustCLI(t, "run", "-d", "busybox", "sh", "-c", "echo up > /live; exec sleep 1000"))
	defer d.CLI("rm", "-f", running)
	for range 50 {
		if r := d.CLI("exec", running, "test", "-f", "/live"); r.Code == 0 {
			break
		}
	}
	out := filepath.Join(dir, "running.tar")
	if r := d.Stock("export", "-o", out, running); r.Code != 0 {
		t.Fatalf("export of a running container: %s", r)
	}
	if names := tarNames(t, out); !names["live"] {
		t.Error("export of a running container lacks the file it wrote")
	}
	if r := d.CLI("exec", running, "true"); r.Code != 0 || !rootfsMounted(t, d, running) {
		t.Errorf("the running container was disturbed by the export: %s", r)
	}

	if r := d.Stock("export", "-o", filepath.Join(dir, "x.tar"), "no-such-container"); r.Code == 0 || !strings.Contains(r.Stderr, "No such container") {
		t.Errorf("export of a missing container: %s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tar")); err == nil {
		t.Error("a failed export left its output file")
	}
}
