package image

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/opencontainers/go-digest"
)

func TestSearchNames(t *testing.T) {
	s := &Store{}
	if got := s.searchNamesLocked("fedora"); !reflect.DeepEqual(got, []string{"fedora"}) {
		t.Errorf("no search list: %v", got)
	}
	s.SetSearchList([]string{"a.example", "docker.io", "b.example:5000"})
	for ref, want := range map[string][]string{
		"fedora":                   {"a.example/fedora", "fedora", "b.example:5000/fedora"},
		"docker.io/library/fedora": {"a.example/fedora", "docker.io/library/fedora", "b.example:5000/fedora"},
		"user/app:v1":              {"a.example/user/app:v1", "user/app:v1", "b.example:5000/user/app:v1"},
		"quay.example/x":           {"quay.example/x"},
		"localhost:5000/x":         {"localhost:5000/x"},
	} {
		if got := s.searchNamesLocked(ref); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", ref, got, want)
		}
	}
}

// A pull cut short keeps the layers it completed (unheld, for the next
// pull's AcquireLayer) where ReleaseLayers removes them.
func TestReleaseLayersKeepPulled(t *testing.T) {
	e := newEnv(t, "vfs")
	ctx := context.Background()
	d1 := digest.FromBytes(layer1)
	c1, err := e.store.ApplyLayer(ctx, "", d1, bytes.NewReader(layer1))
	if err != nil {
		t.Fatal(err)
	}
	e.store.ReleaseLayersKeepPulled([]digest.Digest{c1})
	if !e.store.AcquireLayer(c1) {
		t.Fatal("the completed layer of a cancelled pull was removed")
	}
	e.store.ReleaseLayers([]digest.Digest{c1})
	if e.store.AcquireLayer(c1) {
		t.Fatal("ReleaseLayers kept an unheld layer")
	}
}
