//go:build integration

package integrationcli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sinceNow is a --since value for this very moment (nanoseconds: events
// of a moment before are left out).
func sinceNow() string {
	now := time.Now()
	return fmt.Sprintf("%d.%09d", now.Unix(), now.Nanosecond())
}

// eventLines runs `docker events` between since and now+1s with the
// filters and format given, through cli, and returns its lines.
func eventLines(t *testing.T, cli func(args ...string) Result, since string, args ...string) []string {
	t.Helper()
	until := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
	r := cli(append([]string{"events", "--since", since, "--until", until}, args...)...)
	if r.Code != 0 {
		t.Fatalf("docker events %v: %s", args, r)
	}
	var out []string
	// Lines keep their trailing spaces (an empty last field).
	for _, l := range strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Image events (tag, untag, delete, save, load, import, create by a
// commit, with the container's commit event) with Docker's attributes,
// selected by --filter image=, event= and type=, through both CLIs.
func TestEventsImages(t *testing.T) {
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
		suffix := strings.ToLower(filepath.Base(t.Name()))
		tag, committed := "evimg-"+suffix+":one", "evcommit-"+suffix+":x"
		since := sinceNow()
		id := must("inspect", "-f", "{{.Id}}", "busybox")
		must("tag", "busybox", tag)
		must("rmi", tag)
		tarball := filepath.Join(t.TempDir(), "b.tar")
		must("save", "-o", tarball, "busybox")
		must("load", "-q", "-i", tarball)
		ctr := remember(must("create", "--label", "evlabel=1", "busybox", "true"))
		defer d.CLI("rm", "-f", ctr)
		newID := must("commit", "-m", "a comment", ctr, committed)
		must("rmi", committed)

		got := eventLines(t, cli, since, "--filter", "type=image", "--filter", "image="+id,
			"--format", "{{.Action}} {{.Actor.ID}} {{.Actor.Attributes.name}}")
		want := []string{"tag " + id + " " + tag, "untag " + id + " " + id, "save " + id + " " + id, "load " + id + " " + id}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("image events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// A commit: the container's commit event, the image's create and
		// tag, then the rmi's untag and delete.
		got = eventLines(t, cli, since, "--filter", "image="+newID, "--format", "{{.Type}} {{.Action}} {{.Actor.Attributes.name}}")
		want = []string{"image create " + newID, "image tag " + committed, "image untag " + newID, "image delete " + newID}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("commit's image events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		got = eventLines(t, cli, since, "--filter", "container="+ctr, "--filter", "event=commit",
			"--format", "{{.Actor.Attributes.comment}}|{{.Actor.Attributes.imageID}}|{{.Actor.Attributes.imageRef}}|{{.Actor.Attributes.evlabel}}")
		if len(got) != 1 || got[0] != "a comment|"+newID+"|"+committed+"|1" {
			t.Errorf("commit event: %q", got)
		}
		// event= and type= together; no network event matches an image.
		if got := eventLines(t, cli, since, "--filter", "event=delete", "--filter", "type=image", "--format", "{{.Actor.ID}}"); len(got) != 1 || got[0] != newID {
			t.Errorf("event=delete type=image: %q", got)
		}
		if got := eventLines(t, cli, since, "--filter", "image="+id, "--filter", "type=network"); len(got) != 0 {
			t.Errorf("image= with type=network: %q", got)
		}
	})
	// An import: its tag, then the import.
	since := sinceNow()
	imp := d.MustCLI(t, "import", busyboxTar, "evimport:x")
	defer d.CLI("rmi", "evimport:x")
	got := eventLines(t, d.Stock, since, "--filter", "type=image", "--filter", "image="+imp, "--format", "{{.Action}} {{.Actor.Attributes.name}}")
	if strings.Join(got, ",") != "tag evimport:x,import "+imp {
		t.Errorf("import events: %q", got)
	}
}

// Network events: create, connect (a container's start and network
// connect), disconnect (network disconnect and the container's end),
// destroy, with the network's name and type and the container; selected
// by --filter network= (name or ID) and type=network.
func TestEventsNetworks(t *testing.T) {
	d := shared
	n := claimBridgeNumber(t)
	since := sinceNow()
	netID := d.MustCLI(t, "network", "create", "--subnet", fmt.Sprintf("10.217.%d.0/24", n), "evnet")
	ctr := remember(d.MustCLI(t, "run", "-d", "--network", "evnet", "busybox", "sleep", "300"))
	d.MustCLI(t, "network", "disconnect", "evnet", ctr)
	d.MustCLI(t, "network", "connect", "evnet", ctr)
	d.MustCLI(t, "rm", "-f", ctr)
	d.MustCLI(t, "network", "rm", "evnet")
	clis(t, d, func(t *testing.T, cli func(args ...string) Result) {
		for _, f := range []string{"network=evnet", "network=" + netID, "network=" + netID[:12]} {
			got := eventLines(t, cli, since, "--filter", f, "--format", "{{.Type}} {{.Action}} {{.Actor.ID}} {{.Actor.Attributes.name}} {{.Actor.Attributes.type}} {{index .Actor.Attributes \"container\"}}")
			pre := "network %s " + netID + " evnet bridge"
			want := []string{fmt.Sprintf(pre, "create") + " ", fmt.Sprintf(pre, "connect") + " " + ctr, fmt.Sprintf(pre, "disconnect") + " " + ctr,
				fmt.Sprintf(pre, "connect") + " " + ctr, fmt.Sprintf(pre, "disconnect") + " " + ctr, fmt.Sprintf(pre, "destroy") + " "}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("--filter %s:\n%s\nwant\n%s", f, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		if got := eventLines(t, cli, since, "--filter", "type=network", "--filter", "event=destroy", "--format", "{{.Actor.Attributes.name}}"); len(got) != 1 || got[0] != "evnet" {
			t.Errorf("type=network event=destroy: %q", got)
		}
		if got := eventLines(t, cli, since, "--filter", "network=evnet", "--filter", "scope=swarm"); len(got) != 0 {
			t.Errorf("scope=swarm: %q", got)
		}
	})
}

// SIGHUP reloads daemon.json: a "reload" daemon event with Docker's
// attributes (selected by --filter daemon= and type=daemon); a file that
// does not load leaves the daemon running, without an event.
func TestEventsDaemonReload(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	hostname, _ := os.Hostname()
	since := sinceNow()
	if err := syscall.Kill(d.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var got []string
	waitFor(t, func() bool {
		got = eventLines(t, d.Stock, since, "--filter", "type=daemon", "--filter", "daemon="+hostname,
			"--format", "{{.Action}} {{.Actor.ID}} {{.Actor.Attributes.name}} debug={{.Actor.Attributes.debug}} {{index .Actor.Attributes \"registry-mirrors\"}}")
		return len(got) > 0
	})
	if len(got) != 1 || got[0] != "reload "+hostname+" "+hostname+" debug=true []" {
		t.Errorf("reload events: %q", got)
	}
	// A broken file: logged, nothing reloaded, the daemon goes on.
	if err := os.WriteFile(filepath.Join(d.Dir, "daemon.json"), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	since = sinceNow()
	if err := syscall.Kill(d.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(d.Log(), "the configuration was not reloaded") })
	if got := eventLines(t, d.CLI, since, "--filter", "type=daemon"); len(got) != 0 {
		t.Errorf("reload event for a broken file: %q", got)
	}
	d.MustCLI(t, "version")
}

// 1000 subscribers that never read their events do not hold the daemon
// up: a burst of events later, the API still answers within a bound, and
// the subscriptions end when their clients go.
func TestEventsIdleSubscribersDoNotBlock(t *testing.T) {
	d := boundsDaemon(t)
	conns := make([]net.Conn, 0, 1000)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	listeners := func() int {
		n, _ := strconv.Atoi(strings.TrimSpace(d.CLI("info", "--format", "{{.NEventsListener}}").Stdout))
		return n
	}
	// By hundreds, each subscribed before the next: the daemon holds at
	// most 512 connections that have not sent their headers yet.
	for i := 0; i < 1000; i++ {
		c, err := net.DialTimeout("unix", d.Sock, 5*time.Second)
		if err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		fmt.Fprint(c, "GET /v1.51/events HTTP/1.1\r\nHost: docker\r\n\r\n")
		conns = append(conns, c)
		if (i+1)%100 == 0 {
			waitUntil(t, 30*time.Second, fmt.Sprintf("%d event subscribers", i+1), func() bool { return listeners() >= i+1 })
		}
	}
	// Each volume create and rm is an event for every subscriber: far
	// more than a subscriber's buffer or its socket holds.
	start := time.Now()
	for i := 0; i < 150; i++ {
		name := fmt.Sprintf("evburst%d", i)
		d.MustCLI(t, "volume", "create", name)
		d.MustCLI(t, "volume", "rm", name)
	}
	t.Logf("300 events to 1000 idle subscribers in %s", time.Since(start).Round(time.Millisecond))
	versionAnswers(t, d, 5*time.Second)
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	waitUntil(t, 30*time.Second, "the subscriptions to end", func() bool { return listeners() == 0 })
}
