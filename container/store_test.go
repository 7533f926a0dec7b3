package container

import (
	"os"
	"path/filepath"
	"reflect"
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

func TestStoreLinks(t *testing.T) {
	s, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	child := New(s.Root(), "c000000000000000000000000000000000000000000000000000000000000000", "/db")
	parent := New(s.Root(), "p000000000000000000000000000000000000000000000000000000000000000", "/app")
	for _, c := range []*Container{child, parent} {
		if err := s.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	parent.Lock()
	s.SetLinks(parent, map[string]string{"mysql": child.ID})
	parent.Unlock()
	if c, err := s.Get("app/mysql"); err != nil || c != child {
		t.Fatalf("Get(app/mysql) = %v, %v", c, err)
	}
	if got := s.LinkNames(child.ID); !reflect.DeepEqual(got, []string{"/app/mysql"}) {
		t.Errorf("LinkNames = %q", got)
	}
	// Renames on either side keep the link.
	child.Lock()
	if err := s.Rename(child, "/db2"); err != nil {
		t.Fatal(err)
	}
	child.Unlock()
	parent.Lock()
	if err := s.Rename(parent, "/app2"); err != nil {
		t.Fatal(err)
	}
	if got := s.Links(parent); !reflect.DeepEqual(got, []string{"/db2:/app2/mysql"}) {
		t.Errorf("Links = %q", got)
	}
	parent.Unlock()
	if c, err := s.Get("/app2/mysql"); err != nil || c != child {
		t.Fatalf("Get(/app2/mysql) = %v, %v", c, err)
	}
	if err := os.MkdirAll(parent.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveLink("/app2/mysql"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("app2/mysql"); err == nil {
		t.Error("the link is still a name")
	}
	if _, err := s.RemoveLink("/app2/mysql"); err == nil {
		t.Error("removing a missing link: no error")
	}
}
