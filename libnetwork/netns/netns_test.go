package netns

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/sdengine/engine/internal/testenv"
)

func TestCreateRemove(t *testing.T) {
	testenv.RequireRoot(t)
	p := filepath.Join(t.TempDir(), "ns")
	if err := Create(p); err != nil {
		t.Fatal(err)
	}
	h, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := netns.Get()
	if h.Equal(self) {
		t.Error("the new namespace is the test's own")
	}
	h.Close()
	self.Close()
	if err := Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("file left: %v", err)
	}
	if err := Remove(p); err != nil {
		t.Errorf("second remove: %v", err)
	}
}
