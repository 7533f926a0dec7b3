//go:build integration

package integrationcli

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// buildWith runs a CLI's classic builder against d with its own
// DOCKER_CONFIG (the credentials it sends as X-Registry-Config).
func buildWith(bin string, d *Daemon, cfgDir string, args ...string) Result {
	cmd := exec.Command(bin, append([]string{"build"}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_BUILDKIT=0", "DOCKER_CLI_HINTS=false", "DOCKER_CONFIG="+cfgDir)
	var r Result
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.Code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.Code = ee.ExitCode()
		}
	}
	r.Stdout, r.Stderr = out.String(), errb.String()
	return r
}

// TestBuildPullsBase: a FROM naming an image the daemon lacks is pulled
// from the (loopback) registry during the build, with the credentials
// the CLI sends; --pull fetches the registry's newer image even when a
// local one has the name.
func TestBuildPullsBase(t *testing.T) {
	reg := startRegistry(t, true)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	base := reg.Addr + "/base/busybox:v1"
	origID, _ := inspectImage(t, d, "busybox")

	for _, c := range []struct{ name, bin string }{{"ours", ourCLI}, {"stock", stockCLI}} {
		bin := c.bin
		t.Run(c.name, func(t *testing.T) {
			cfg := t.TempDir()
			if r := runWithConfig(bin, d, cfg, reg.Pass+"\n", "login", "-u", reg.User, "--password-stdin", reg.Addr); r.Code != 0 {
				t.Fatalf("login: %s", r)
			}
			// The registry's v1 carries a marker the local busybox lacks.
			marked := buildCtx(t, map[string]string{"Dockerfile": "FROM busybox\nRUN echo from-registry > /marker\n"})
			if r := buildWith(bin, d, cfg, "-t", base, marked); r.Code != 0 {
				t.Fatalf("build the base: %s", r)
			}
			markedID, _ := inspectImage(t, d, base)
			if r := runWithConfig(bin, d, cfg, "", "push", base); r.Code != 0 {
				t.Fatalf("push: %s", r)
			}
			d.MustCLI(t, "rmi", base)

			ctx := buildCtx(t, map[string]string{"Dockerfile": "FROM " + base + "\nCMD [\"cat\", \"/marker\"]\n"})
			if r := buildWith(bin, d, t.TempDir(), "-t", "it-from-pulled", ctx); r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "pull access denied") && !strings.Contains(r.Stdout+r.Stderr, "unauthorized") {
				t.Fatalf("build without credentials: %s", r)
			}
			r := buildWith(bin, d, cfg, "-t", "it-from-pulled", ctx)
			if r.Code != 0 || !strings.Contains(r.Stdout, "Pulling from base/busybox") || !strings.Contains(r.Stdout, "Status: Downloaded newer image for "+base) {
				t.Fatalf("build pulling its base: %s", r)
			}
			if id, _ := inspectImage(t, d, base); id != markedID {
				t.Fatalf("pulled base %s, want %s", id, markedID)
			}
			if out := d.MustCLI(t, "run", "--rm", "it-from-pulled"); out != "from-registry" {
				t.Fatalf("run: %q", out)
			}

			// A local image of that name, older than the registry's:
			// without --pull it is used, with --pull the registry's is.
			d.MustCLI(t, "tag", origID, base)
			if r := buildWith(bin, d, cfg, "-t", "it-from-pulled", ctx); r.Code != 0 || strings.Contains(r.Stdout, "Pulling from") {
				t.Fatalf("build with the local base: %s", r)
			}
			r = buildWith(bin, d, cfg, "--pull", "-t", "it-from-pulled", ctx)
			if r.Code != 0 || !strings.Contains(r.Stdout, "Pulling from base/busybox") {
				t.Fatalf("build --pull: %s", r)
			}
			if out := d.MustCLI(t, "run", "--rm", "it-from-pulled"); out != "from-registry" {
				t.Fatalf("run after --pull: %q", out)
			}
			// -q: the pull's progress is not shown.
			d.MustCLI(t, "tag", origID, base)
			if r := buildWith(bin, d, cfg, "-q", "--pull", "-t", "it-from-pulled", ctx); r.Code != 0 || strings.Contains(r.Stdout, "Pulling") {
				t.Fatalf("build -q --pull: %s", r)
			}
			d.MustCLI(t, "rmi", "it-from-pulled", base)
		})
	}
}
