package formatter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
)

var now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func sampleContainers() []any {
	return []any{
		Container{Now: now, Trunc: true, C: container.Summary{
			ID: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Image: "busybox",
			Command: "sh -c 'while true; do sleep 1; done'", Created: now.Add(-5 * time.Second).Unix(),
			Status: "Up 4 seconds", State: "running", Names: []string{"/web", "/other/alias"},
			Labels: map[string]string{"b": "2", "a": "1"},
		}},
		Container{Now: now, Trunc: true, C: container.Summary{
			ID:    "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
			Image: "sha256:aaaaaaaaaaaabbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", Command: "true",
			Created: now.Add(-2 * time.Hour).Unix(), Status: "Exited (3) 2 hours ago", State: "exited",
			Names: []string{"/db"},
			Ports: []container.Port{{IP: "0.0.0.0", PrivatePort: 80, PublicPort: 8080, Type: "tcp"}, {PrivatePort: 53, Type: "udp"}},
		}},
	}
}

func TestContainerTable(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "", ContainerTableFormat, ContainerHeaders, sampleContainers()); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"CONTAINER ID   IMAGE          COMMAND                  CREATED         STATUS                   PORTS                          NAMES\n" +
		"0123456789ab   busybox        \"sh -c 'while true; …\"   5 seconds ago   Up 4 seconds                                            web\n" +
		"fedcba987654   aaaaaaaaaaaa   \"true\"                   2 hours ago     Exited (3) 2 hours ago   0.0.0.0:8080->80/tcp, 53/udp   db\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestContainerFormats(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, ContainerQuietFormat, ContainerTableFormat, ContainerHeaders, sampleContainers()); err != nil {
		t.Fatal(err)
	}
	if b.String() != "0123456789ab\nfedcba987654\n" {
		t.Fatalf("quiet: %q", b.String())
	}
	b.Reset()
	// A shell-typed \t becomes a tab; "table" adds the header row.
	if err := Write(&b, `table {{.Names}}\t{{.Label "a"}}\t{{.Labels}}`, ContainerTableFormat, ContainerHeaders, sampleContainers()); err != nil {
		t.Fatal(err)
	}
	want := "NAMES     a         LABELS\nweb       1         a=1,b=2\ndb                  \n"
	if b.String() != want {
		t.Fatalf("got %q want %q", b.String(), want)
	}
	b.Reset()
	if err := Write(&b, "json", ContainerTableFormat, ContainerHeaders, sampleContainers()[:1]); err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["Names"] != "web" || m["State"] != "running" {
		t.Fatalf("json: %q %v", b.String(), err)
	}
	b.Reset()
	if err := Write(&b, `{{json .Names}} {{upper .State}} {{truncate .ID 4}} {{join (split "a,b" ",") "+"}}`, "", nil, sampleContainers()[:1]); err != nil {
		t.Fatal(err)
	}
	if b.String() != "\"web\" RUNNING 012… a+b\n" {
		t.Fatalf("funcs: %q", b.String())
	}
	if err := Write(&b, "{{.Nope", "", nil, nil); err == nil || !strings.Contains(err.Error(), "template parsing error") {
		t.Fatalf("bad template: %v", err)
	}
}

func TestNoTrunc(t *testing.T) {
	c := sampleContainers()[0].(Container)
	c.Trunc = false
	if len(c.ID()) != 64 || c.Command() != `"sh -c 'while true; do sleep 1; done'"` || c.Names() != "web,other/alias" {
		t.Fatalf("no-trunc: %s %s %s", c.ID(), c.Command(), c.Names())
	}
}

func TestEllipsis(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"hello", 10, "hello"}, {"hello world", 5, "hell…"}, {"héllo", 3, "hé…"}, {"abc", 0, ""}} {
		if got := Ellipsis(c.in, c.n); got != c.want {
			t.Errorf("Ellipsis(%q,%d)=%q want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestImageRowsAndTable(t *testing.T) {
	id := "sha256:3b0d761539e1712e5ad1bc2cf5ced7f41e76618a673a543601635fd1cc5d0a23"
	imgs := []image.Summary{
		{ID: id, RepoTags: []string{"busybox:latest", "localhost:5000/bb:v2"}, Created: now.Add(-3 * 24 * time.Hour).Unix(), Size: 1985472, SharedSize: -1, Containers: -1},
		{ID: "sha256:1111111111112222222222222222222222222222222222222222222222222222", Created: now.Add(-time.Minute).Unix(), Size: 1 << 20, SharedSize: -1, Containers: -1},
		{ID: "sha256:9999999999992222222222222222222222222222222222222222222222222222", RepoDigests: []string{"repo@sha256:abcd"}, Created: now.Unix(), Size: 10},
	}
	var items []any
	for _, img := range imgs {
		for _, r := range ImageRows(img, true) {
			r.Now = now
			items = append(items, r)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, "", ImageTableFormat, ImageHeaders, items); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"REPOSITORY          TAG       IMAGE ID       CREATED                  SIZE\n" +
		"busybox             latest    3b0d761539e1   3 days ago               1.99MB\n" +
		"localhost:5000/bb   v2        3b0d761539e1   3 days ago               1.99MB\n" +
		"<none>              <none>    111111111111   About a minute ago       1.05MB\n" +
		"repo                <none>    999999999999   Less than a second ago   10B\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	full := ImageRows(imgs[0], false)[0]
	if full.ID() != id || full.Digest() != "<none>" {
		t.Fatalf("no-trunc ID %s digest %s", full.ID(), full.Digest())
	}
	if d := ImageRows(imgs[2], true)[0].Digest(); d != "sha256:abcd" {
		t.Fatalf("digest %s", d)
	}
}

func TestSplitRepoTag(t *testing.T) {
	for in, want := range map[string][2]string{
		"busybox:latest":         {"busybox", "latest"},
		"localhost:5000/bb:v2":   {"localhost:5000/bb", "v2"},
		"localhost:5000/bb":      {"localhost:5000/bb", "<none>"},
		"library/busybox:1.36.1": {"library/busybox", "1.36.1"},
	} {
		r, tg := SplitRepoTag(in)
		if r != want[0] || tg != want[1] {
			t.Errorf("SplitRepoTag(%q) = %q %q", in, r, tg)
		}
	}
}
