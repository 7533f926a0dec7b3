package image

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Each operation reports Docker's image events, in Docker's order, with
// the image's labels and its name (the tag for a tag, else the ID).
func TestEvents(t *testing.T) {
	e := newEnv(t, "")
	s := e.store
	var got []string
	s.SetEvents(func(action eventtypes.Action, id string, attrs map[string]string) {
		got = append(got, fmt.Sprintf("%s %s name=%s app=%s", action, id, attrs["name"], attrs["app"]))
	})
	expect := func(what string, want ...string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: events\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		got = nil
	}

	img, err := s.Import(ctx, bytes.NewReader(mkTar(tarFile{"f", "x"})), "ev:one",
		ImportOptions{Config: ocispec.ImageConfig{Labels: map[string]string{"app": "a"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := img.ID.String()
	expect("import", "tag "+id+" name=ev:one app=a", "import "+id+" name="+id+" app=a")

	if err := s.Tag("ev:one", "ev:two"); err != nil {
		t.Fatal(err)
	}
	expect("tag", "tag "+id+" name=ev:two app=a")

	if err := s.Save(ctx, []string{"ev:one"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	expect("save", "save "+id+" name="+id+" app=a")

	c, err := s.Commit(ctx, CommitOptions{Parent: img.ID, Tags: []string{"ev:commit"}, Config: func(diffIDs []digest.Digest) ([]byte, error) {
		cfg := img.Config
		cfg.RootFS.DiffIDs = diffIDs
		cfg.Config.Labels = map[string]string{"app": "c"}
		return json.Marshal(cfg)
	}})
	if err != nil {
		t.Fatal(err)
	}
	cid := c.ID.String()
	expect("commit", "create "+cid+" name="+cid+" app=c", "tag "+cid+" name=ev:commit app=c")

	if _, err := s.Delete("ev:two", false, nil); err != nil {
		t.Fatal(err)
	}
	expect("untag", "untag "+id+" name="+id+" app=a")
	// The delete of the last tag: untag, then delete (without labels:
	// the image is gone).
	if _, err := s.Delete("ev:commit", false, nil); err != nil {
		t.Fatal(err)
	}
	expect("delete", "untag "+cid+" name="+cid+" app=c", "delete "+cid+" name="+cid+" app=")

	var saved bytes.Buffer
	if err := s.Save(ctx, []string{"ev:one"}, &saved); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(id, false, nil); err != nil {
		t.Fatal(err)
	}
	got = nil
	if _, err := s.Load(ctx, &saved, nil); err != nil {
		t.Fatal(err)
	}
	expect("load", "load "+id+" name="+id+" app=a")

	// A failed operation reports nothing.
	if err := s.Tag("nothere", "ev:x"); err == nil {
		t.Fatal("tag of a missing image")
	}
	expect("failed tag")
}
