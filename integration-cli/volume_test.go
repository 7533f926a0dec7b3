//go:build integration

package integrationcli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Named volumes persist across containers; anonymous ones from an image's
// VOLUME are filled from the image; --mount, --volumes-from, rm -v and a
// volume in use, with both CLIs.
func TestVolumes(t *testing.T) {
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
		name := "vt-" + strings.ToLower(filepath.Base(t.Name()))
		since := strconv.FormatInt(time.Now().Unix()-1, 10)
		must("volume", "create", "--label", "k=v", name)
		defer cli("volume", "rm", "-f", name)
		// Its create event, with Docker's attributes.
		until := strconv.FormatInt(time.Now().Unix()+1, 10)
		if r := d.Stock("events", "--since", since, "--until", until, "--filter", "type=volume", "--filter", "volume="+name, "--format", "{{.Action}} {{.Actor.Attributes.driver}}"); r.Code != 0 || !strings.Contains(r.Stdout, "create local") {
			t.Errorf("volume create event: %s", r)
		}
		must("run", "--rm", "-v", name+":/data", "busybox", "sh", "-c", "echo kept > /data/f")
		if out := must("run", "--rm", "-v", name+":/data", "busybox", "cat", "/data/f"); out != "kept" {
			t.Errorf("named volume lost its data: %q", out)
		}
		if out := must("volume", "ls", "-q", "--filter", "label=k=v"); !strings.Contains(out, name) {
			t.Errorf("volume ls label filter: %q", out)
		}
		// system df counts the volume with its data (the stock CLI's: ours
		// has no system df).
		if r := d.Stock("system", "df", "-v", "--format", "{{range .Volumes}}{{.Name}} {{.Size}};{{end}}"); r.Code != 0 || !strings.Contains(r.Stdout, name+" 5B;") {
			t.Errorf("system df -v: %s", r)
		}
		// In use: refused.
		id := remember(must("create", "-v", name+":/data", "busybox"))
		if r := cli("volume", "rm", name); r.Code == 0 || !strings.Contains(r.Stderr, "volume is in use - ["+id+"]") {
			t.Errorf("removing a volume in use: %s", r)
		}
		// --volumes-from sees the same data, read-only when asked.
		if out := must("run", "--rm", "--volumes-from", id+":ro", "busybox", "sh", "-c", "cat /data/f; touch /data/x 2>/dev/null || echo ro"); out != "kept\nro" {
			t.Errorf("--volumes-from: %q", out)
		}
		must("rm", id)

		// --mount variants: a read-only volume, a tmpfs with a size.
		if out := must("run", "--rm", "--mount", "type=volume,source="+name+",target=/data,readonly", "busybox", "sh", "-c", "touch /data/y 2>/dev/null || echo ro"); out != "ro" {
			t.Errorf("readonly --mount: %q", out)
		}
		if out := must("run", "--rm", "--mount", "type=tmpfs,target=/t,tmpfs-size=1m", "busybox", "sh", "-c", "grep ' /t ' /proc/mounts"); !strings.Contains(out, "size=1024k") {
			t.Errorf("tmpfs size: %q", out)
		}
		if r := cli("run", "--rm", "--mount", "type=volume,target=/d,bogus=1", "busybox", "true"); r.Code == 0 {
			t.Errorf("--mount with an unknown key accepted")
		}

		// An anonymous volume from -v /path, removed with rm -v.
		anonCtr := remember(must("run", "-d", "-v", "/anon", "busybox", "true"))
		must("wait", anonCtr)
		vol := must("inspect", "-f", "{{(index .Mounts 0).Name}}", anonCtr)
		if len(vol) != 64 {
			t.Fatalf("anonymous volume name %q", vol)
		}
		if out := must("volume", "inspect", "-f", "{{index .Labels \"com.docker.volume.anonymous\"}}|{{.Scope}}", vol); out != "|local" {
			t.Errorf("anonymous volume inspect: %q", out)
		}
		must("rm", "-v", anonCtr)
		if r := cli("volume", "inspect", vol); r.Code == 0 {
			t.Errorf("rm -v left the anonymous volume %s", vol)
		}
	})
}

// An image's VOLUME is an anonymous volume filled from the image's content
// at that path, owners kept.
func TestVolumeFromImageFilled(t *testing.T) {
	d := shared
	img := "vol-image-test"
	ctx := t.TempDir()
	if err := os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte("FROM busybox\nRUN mkdir /vol && echo from-image > /vol/f && chown 123:45 /vol/f\nVOLUME /vol\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := d.CLI("build", "-q", "-t", img, ctx)
	if r.Code != 0 {
		t.Fatalf("build: %s", r)
	}
	defer d.CLI("rmi", img)
	out := d.MustCLI(t, "run", "--rm", img, "sh", "-c", "cat /vol/f; stat -c %u:%g /vol/f")
	if out != "from-image\n123:45" {
		t.Errorf("VOLUME not filled from the image: %q", out)
	}
}

// docker cp both ways with a container holding links out of its root:
// nothing outside the container or the host target is read or written.
func TestCopyHostileSymlinks(t *testing.T) {
	d := shared
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := remember(d.MustCLI(t, "run", "-d", "busybox", "sh", "-c",
		"ln -s / /escape && ln -s ../../../../etc /up && ln -s "+host+" /hostdir && mkdir /d && echo inside > /d/f && sleep 300"))
	defer d.CLI("rm", "-f", id)
	// run -d returns once the shell started, not once it made the links
	// (a loaded machine shows the difference): /d/f comes last.
	waitInContainer(t, d, id, "test", "-f", "/d/f")
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		dst := t.TempDir()
		// Out through the links: what is read is the container's own.
		if r := cli("cp", id+":/up/hostname", filepath.Join(dst, "h")); r.Code != 0 {
			t.Fatalf("cp out through /up: %s", r)
		}
		if r := cli("cp", id+":/hostdir/secret", filepath.Join(dst, "s")); r.Code == 0 {
			if b, _ := os.ReadFile(filepath.Join(dst, "s")); string(b) == "host secret" {
				t.Fatal("cp read a host file through a container's link")
			}
		}
		// In through the links: lands inside the container, or fails.
		src := filepath.Join(dst, "in")
		if err := os.WriteFile(src, []byte("pwned"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"/escape/", "/up/", "/hostdir/", "/escape/tmp/"} {
			_ = cli("cp", src, id+":"+target)
		}
		if b, _ := os.ReadFile(secret); string(b) != "host secret" {
			t.Fatal("host file changed")
		}
		if _, err := os.Stat(filepath.Join(host, "in")); err == nil {
			t.Fatal("cp wrote into a host directory through a container's link")
		}
		if _, err := os.Stat("/etc/in"); err == nil {
			t.Fatal("cp wrote into the host's /etc")
		}
		// A directory both ways, and the link itself archived as a link.
		if r := cli("cp", id+":/d", filepath.Join(dst, "d")); r.Code != 0 {
			t.Fatalf("cp dir out: %s", r)
		}
		if b, _ := os.ReadFile(filepath.Join(dst, "d", "f")); string(b) != "inside\n" {
			t.Errorf("cp dir out: %q", b)
		}
		if r := cli("cp", id+":/escape", filepath.Join(dst, "esc")); r.Code != 0 {
			t.Fatalf("cp link out: %s", r)
		}
		if l, err := os.Readlink(filepath.Join(dst, "esc")); err != nil || l != "/" {
			t.Errorf("link copied as %q %v", l, err)
		}
		if r := cli("cp", filepath.Join(dst, "d"), id+":/d2"); r.Code != 0 {
			t.Fatalf("cp dir in: %s", r)
		}
		if out := d.MustCLI(t, "exec", id, "cat", "/d2/f"); out != "inside" {
			t.Errorf("cp dir in: %q", out)
		}
	})
	// Stopped: the rootfs is mounted for the copy.
	d.MustCLI(t, "kill", id)
	d.MustCLI(t, "wait", id)
	dst := t.TempDir()
	if r := d.CLI("cp", id+":/d/f", filepath.Join(dst, "f")); r.Code != 0 {
		t.Fatalf("cp from a stopped container: %s", r)
	}
	if r := d.CLI("cp", id+":/nope", dst); r.Code == 0 || !strings.Contains(r.Stderr, "Could not find the file /nope") {
		t.Errorf("cp of a missing path: %s", r)
	}
}

// waitInContainer runs the command in the container until it succeeds:
// for a setup step of the container's own process. Bounded (1 min) only
// to end a test whose container is stuck.
func waitInContainer(t *testing.T, d *Daemon, id string, cmd ...string) {
	t.Helper()
	var r Result
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(50 * time.Millisecond) {
		if r = d.CLI(append([]string{"exec", id}, cmd...)...); r.Code == 0 {
			return
		}
	}
	t.Fatalf("%v in %s did not succeed within 1 min: %s", cmd, id[:12], r)
}
