//go:build integration

package integrationcli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types"
)

func layerCount(t *testing.T, d *Daemon) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(d.Root, "image", "layerdb", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			n++
		}
	}
	return n
}

// TestImagePruneAndDiskUsage: a layer two images share survives the
// removal of one and goes with the last; image prune removes dangling
// images (and with -a unused ones, filtered by label), never one a
// container uses, and reports the space it freed; system df counts the
// images' shared size.
func TestImagePruneAndDiskUsage(t *testing.T) {
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)
	loadBusybox(t, d)
	build := func(tag, df string) string {
		t.Helper()
		ctx := buildCtx(t, map[string]string{"Dockerfile": df})
		if r := d.CLI("build", "-q", "-t", tag, ctx); r.Code != 0 {
			t.Fatalf("build %s: %s", tag, r)
		}
		id, _ := inspectImage(t, d, tag)
		return id
	}
	base := layerCount(t, d)
	build("it-a", "FROM busybox\nRUN head -c 100000 /dev/urandom > /a\n")
	build("it-b", "FROM busybox\nRUN head -c 200000 /dev/urandom > /b\n")
	if n := layerCount(t, d); n != base+2 {
		t.Fatalf("%d layers after two builds, want %d", n, base+2)
	}

	du, err := d.Client(t).DiskUsage(context.Background(), types.DiskUsageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, im := range du.Images {
		if strings.HasPrefix(im.RepoTags[0], "busybox") && im.SharedSize != im.Size {
			t.Errorf("busybox: SharedSize %d, want its whole size %d", im.SharedSize, im.Size)
		}
		if im.RepoTags[0] == "it-b:latest" && (im.Size-im.SharedSize < 200000 || im.Size-im.SharedSize > 210000) {
			t.Errorf("it-b: own size %d", im.Size-im.SharedSize)
		}
		total += im.Size - im.SharedSize
	}
	if len(du.Images) != 3 || du.LayersSize < 300000 {
		t.Fatalf("df: %d images, layers %d", len(du.Images), du.LayersSize)
	}
	if r := d.Stock("system", "df"); r.Code != 0 || !strings.Contains(r.Stdout, "Images          3") {
		t.Errorf("stock system df: %s", r)
	}

	// The shared busybox layer outlives it-a; it-a's own layer does not.
	d.MustCLI(t, "rmi", "it-a")
	if n := layerCount(t, d); n != base+1 {
		t.Fatalf("%d layers after rmi it-a, want %d", n, base+1)
	}
	d.MustCLI(t, "rmi", "busybox")
	if out := d.MustCLI(t, "run", "--rm", "it-b", "sh", "-c", "wc -c < /b"); out != "200000" {
		t.Fatalf("it-b after its base's removal: %q", out)
	}

	// Dangling: the old it-c once the tag moves; one a container uses stays.
	oldC := build("it-c", "FROM it-b\nLABEL v=1\nRUN echo 1 > /c\n")
	build("it-c", "FROM it-b\nLABEL v=2\nRUN echo 2 > /c\n")
	usedOld := build("it-used", "FROM it-b\nRUN echo used > /u\n")
	build("it-used", "FROM it-b\nRUN echo used2 > /u\n")
	d.MustCLI(t, "create", usedOld)
	r := d.CLI("image", "prune", "-f")
	if r.Code != 0 || !strings.Contains(r.Stdout, "deleted: "+oldC) || strings.Contains(r.Stdout, usedOld) ||
		strings.Contains(r.Stdout, "Total reclaimed space: 0B") {
		t.Fatalf("image prune: %s", r)
	}
	if _, err := d.Client(t).ImageInspect(context.Background(), usedOld); err != nil {
		t.Fatalf("a container's image was pruned: %v", err)
	}

	// -a with a label: only what matches and no container uses.
	build("it-d", "FROM it-b\nLABEL prune=yes\n")
	r = d.Stock("image", "prune", "-a", "-f", "--filter", "label=prune=yes")
	if r.Code != 0 || !strings.Contains(r.Stdout, "untagged: it-d:latest") || strings.Contains(r.Stdout, "it-b") {
		t.Fatalf("image prune -a --filter label: %s", r)
	}
	if r := d.CLI("image", "prune", "-a", "-f", "--filter", "until=abc"); r.Code == 0 {
		t.Fatalf("bad until accepted: %s", r)
	}
	r = d.CLI("image", "prune", "-a", "-f")
	if r.Code != 0 || !strings.Contains(r.Stdout, "untagged: it-c:latest") || strings.Contains(r.Stdout, usedOld) {
		t.Fatalf("image prune -a: %s", r)
	}
	// Layers are counted per image, so the parent's config can go while
	// the used image keeps every layer (Docker would keep it untagged).
	if out := d.MustCLI(t, "images", "-q", "-a", "--no-trunc"); out != usedOld {
		t.Fatalf("left after prune -a: %q, want only the used image", out)
	}
	if out := d.MustCLI(t, "run", "--rm", usedOld, "cat", "/u", "/b"); !strings.HasPrefix(out, "used") {
		t.Fatalf("used image after prune -a: %q", out)
	}
}
