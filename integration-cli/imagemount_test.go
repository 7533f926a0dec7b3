//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// imageMountsOf is the mount table's lines for the container's image
// views (below its directory, image-mounts/).
func imageMountsOf(id string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, filepath.Join("containers", id, "image-mounts")) {
			out = append(out, l)
		}
	}
	return out
}

// makeMountImage commits a two-layer image (busybox plus /data/sub/f)
// as name, so that the view has several lower layers.
func makeMountImage(t *testing.T, d *Daemon, name string) {
	t.Helper()
	src := remember(d.MustCLI(t, "create", "busybox", "sh", "-c", "mkdir -p /data/sub && echo hello > /data/sub/f"))
	d.MustCLI(t, "start", "-a", src)
	d.MustCLI(t, "commit", "--change", "LABEL it.imgmount=1", src, name)
	d.MustCLI(t, "rm", src)
}

// --mount type=image: the image's content read-only at the target (also
// when readonly=false is asked), a subpath of it, the create-time errors
// (missing image, missing or escaping subpath, relative target), the
// image held while a container mounts it, inspect's record, and no view
// left mounted after stop or rm. Both CLIs.
func TestImageMount(t *testing.T) {
	d := shared
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		must := func(args ...string) string {
			t.Helper()
			r := cli(args...)
			if r.Code != 0 {
				t.Fatalf("docker %s: %s", strings.Join(args, " "), r)
			}
			return strings.TrimSpace(r.Stdout)
		}
		img := "imgmount-" + strings.ToLower(filepath.Base(t.Name()))
		makeMountImage(t, d, img)
		defer d.CLI("rmi", "-f", img)
		mnt := "type=image,source=" + img + ",target=/m"

		if out := must("run", "--rm", "--mount", mnt, "busybox", "cat", "/m/data/sub/f"); out != "hello" {
			t.Errorf("image content at the target: %q", out)
		}
		// The base layer (busybox) shows through the top one.
		if out := must("run", "--rm", "--mount", mnt, "busybox", "/m/bin/busybox", "echo", "exec"); out != "exec" {
			t.Errorf("running a binary of the mounted image: %q", out)
		}
		for _, m := range []string{mnt, mnt + ",readonly=false"} {
			if out := must("run", "--rm", "--mount", m, "busybox", "sh", "-c", "touch /m/x 2>/dev/null || echo ro; rm /m/data/sub/f 2>/dev/null || echo ro"); out != "ro\nro" {
				t.Errorf("writes to an image mount (%s): %q", m, out)
			}
		}
		if out := must("run", "--rm", "--mount", mnt+",image-subpath=data/sub", "busybox", "ls", "/m"); out != "f" {
			t.Errorf("image-subpath: %q", out)
		}

		// Errors at create.
		for _, c := range []struct{ mount, want string }{
			{"type=image,source=imgmount-nosuch,target=/m", "imgmount-nosuch"},
			{mnt + ",image-subpath=nosuch", "nosuch"},
			{mnt + ",image-subpath=../etc", ".."},
			{mnt + ",image-subpath=/etc", "relative"},
			{"type=image,source=" + img + ",target=rel", "must be absolute"},
		} {
			if r := cli("create", "--mount", c.mount, "busybox"); r.Code == 0 || !strings.Contains(r.Stderr, c.want) {
				if r.Code == 0 {
					d.CLI("rm", strings.TrimSpace(r.Stdout))
				}
				t.Errorf("create --mount %s: want an error naming %q: %s", c.mount, c.want, r)
			}
		}
		if r := d.CLI("run", "--rm", "--mount", "type=image,source=imgmount-nosuch,target=/m", "busybox", "true"); r.Code == 0 || !strings.Contains(r.Stderr, "not found") {
			t.Errorf("missing image: want not found: %s", r)
		}

		// In use: the image stays, by tag and by ID; inspect records it.
		id := remember(must("run", "-d", "--mount", mnt, "busybox", "sleep", "300"))
		imgID := must("image", "inspect", "-f", "{{.Id}}", img)
		if ms := imageMountsOf(id); len(ms) != 1 {
			t.Errorf("image views of a running container: %q", ms)
		}
		for _, ref := range []string{img, imgID} {
			if r := cli("rmi", ref); r.Code == 0 || !strings.Contains(r.Stderr, "conflict") {
				t.Errorf("rmi %s of an image a container mounts: %s", ref, r)
			}
		}
		// Scoped by label: the shared daemon's other images (it-systemd,
		// the CRI images) belong to other tests.
		if r := cli("image", "prune", "-af", "--filter", "label=it.imgmount"); r.Code != 0 {
			t.Errorf("image prune: %s", r)
		}
		if r := cli("image", "inspect", img); r.Code != 0 {
			t.Errorf("the mounted image went: %s", r)
		}
		got := must("inspect", "-f", "{{range .Mounts}}{{.Type}}|{{.Source}}|{{.Name}}|{{.Destination}}|{{.RW}}{{end}}", id)
		if want := "image|" + img + "|" + imgID + "|/m|false"; got != want {
			t.Errorf("inspect .Mounts: %q, want %q", got, want)
		}
		must("stop", "-t", "0", id)
		if ms := imageMountsOf(id); len(ms) != 0 {
			t.Errorf("image views left after stop: %q", ms)
		}
		must("start", id)
		if out := must("exec", id, "cat", "/m/data/sub/f"); out != "hello" {
			t.Errorf("image mount after a restart: %q", out)
		}
		must("rm", "-f", id)
		if ms := imageMountsOf(id); len(ms) != 0 {
			t.Errorf("image views left after rm: %q", ms)
		}
		if _, err := os.Stat(filepath.Join(d.Root, "containers", id)); !os.IsNotExist(err) {
			t.Errorf("container directory left: %v", err)
		}
		must("rmi", img)
	})
}

// A daemon killed while a container with an image mount runs: the next
// daemon adopts the container, whose view still serves, and once it is
// removed no view is left mounted. With each graph driver (overlay2: an
// overlay of lowerdirs only; vfs: a read-only bind of the top layer).
func TestImageMountRecovery(t *testing.T) {
	for _, drv := range []string{"overlay2", "vfs"} {
		t.Run(drv, func(t *testing.T) {
			d := NewDaemon(t, "--storage-driver", drv)
			d.Start(t)
			defer d.Cleanup(t)
			loadBusybox(t, d)
			makeMountImage(t, d, "imgmount-rec")
			id := remember(d.MustCLI(t, "run", "-d", "--mount", "type=image,source=imgmount-rec,target=/m,image-subpath=data", "busybox", "sleep", "300"))
			if ms := imageMountsOf(id); len(ms) != 1 {
				t.Fatalf("image views of a running container: %q", ms)
			}
			if out := d.MustCLI(t, "exec", id, "sh", "-c", "cat /m/sub/f; touch /m/x 2>/dev/null || echo ro"); out != "hello\nro" {
				t.Errorf("image mount: %q", out)
			}
			d.Kill(t)
			d.Start(t)
			if out := d.MustCLI(t, "exec", id, "cat", "/m/sub/f"); out != "hello" {
				t.Errorf("image mount of an adopted container: %q", out)
			}
			d.MustCLI(t, "rm", "-f", id)
			if ms := imageMountsOf(id); len(ms) != 0 {
				t.Errorf("image views left after rm: %q", ms)
			}
			d.MustCLI(t, "rmi", "imgmount-rec")
		})
	}
}
