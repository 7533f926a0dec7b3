package container

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
)

func newRecord(t *testing.T, root, id, name string) *Container {
	t.Helper()
	c := New(root, id, name)
	c.Config, c.HostConfig = &containertypes.Config{}, &containertypes.HostConfig{}
	if err := os.MkdirAll(c.Root, 0o710); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	return c
}

// NewStore tells a directory without a record (a create or a removal cut
// short: the daemon removes it) from one whose record is damaged (left
// alone), and loads the rest.
func TestStoreFindsDirectoriesWithoutRecords(t *testing.T) {
	root := t.TempDir()
	newRecord(t, root, "good", "/good")
	half := newRecord(t, root, "removed", "/removed")
	half.Lock()
	if err := half.RemoveRecordLocked(); err != nil {
		t.Fatal(err)
	}
	if err := half.RemoveRecordLocked(); err != nil {
		t.Fatalf("removing a removed record: %v", err)
	}
	half.Unlock()
	os.WriteFile(filepath.Join(half.Root, "removed-json.log"), []byte("{}\n"), 0o600)
	if err := os.Mkdir(filepath.Join(root, "created"), 0o710); err != nil {
		t.Fatal(err)
	}
	// An atomic write's temporary file is not a record.
	os.WriteFile(filepath.Join(root, "created", ".config.v2.json.tmp-1"), []byte("{"), 0o600)
	newRecord(t, root, "torn", "/torn")
	os.WriteFile(RecordFile(filepath.Join(root, "torn")), []byte(`{"ID":"torn"`), 0o600)

	s, err := NewStore(root)
	if err != nil {
		t.Fatal(err)
	}
	if l := s.List(); len(l) != 1 || l[0].ID != "good" || !s.Registered("good") || s.Registered("torn") {
		t.Fatalf("loaded %v", l)
	}
	noRecord := s.NoRecord()
	sort.Strings(noRecord)
	if len(noRecord) != 2 || noRecord[0] != "created" || noRecord[1] != "removed" {
		t.Errorf("without a record: %v", noRecord)
	}
	if u := s.Unreadable(); len(u) != 1 || u[0] != "torn" {
		t.Errorf("unreadable: %v", u)
	}
}

func TestRemovalInProgress(t *testing.T) {
	c := New(t.TempDir(), "x", "/x")
	if c.RemovalInProgress() || c.SetRemovalInProgress() {
		t.Fatal("a new container is not being removed")
	}
	if !c.SetRemovalInProgress() || !c.RemovalInProgress() {
		t.Fatal("a second removal must see the first")
	}
	c.ResetRemovalInProgress()
	if c.RemovalInProgress() {
		t.Fatal("reset")
	}
}
