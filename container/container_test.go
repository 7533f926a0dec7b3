package container

import (
	"os"
	"strings"
	"testing"
	"time"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/internal/testenv"
)

// A container that exits while the data root is full still has its exit
// recorded: the record is rewritten in its reserved room.
func TestSaveOnFullDisk(t *testing.T) {
	root := testenv.SmallTmpfs(t, 256<<10)
	id := strings.Repeat("ab", 32)
	c := New(root, id, "/full")
	c.Config = &containertypes.Config{Image: "busybox", Cmd: []string{"sh", "-c", strings.Repeat("echo x; ", 100)}}
	c.HostConfig = &containertypes.HostConfig{}
	if err := os.MkdirAll(c.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	c.State.SetRunning(42)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	testenv.FillDisk(t, root, 1<<20)

	c.State.SetExited(0, time.Now().UTC(), false, "")
	if err := c.Save(); err != nil {
		t.Fatalf("saving the exit on a full disk: %v", err)
	}
	// A longer error message still fits.
	c.State.SetExited(0, time.Now().UTC(), false, strings.Repeat("e", 200))
	if err := c.Save(); err != nil {
		t.Fatalf("saving again on a full disk: %v", err)
	}
	got, err := Load(c.Root)
	if err != nil {
		t.Fatal(err)
	}
	if got.State.Status != StatusExited || got.State.ExitCode != 0 || got.State.Running() {
		t.Fatalf("loaded state %+v", got.State)
	}
}

// A container's hostname is its config's, else its short ID.
func TestHostname(t *testing.T) {
	c := &Container{ID: "0123456789abcdef0123", Config: &containertypes.Config{}}
	if h := c.Hostname(); h != "0123456789ab" {
		t.Errorf("default hostname %q", h)
	}
	c.Config.Hostname = "web"
	if h := c.Hostname(); h != "web" {
		t.Errorf("hostname %q", h)
	}
	c.Config = nil
	if h := c.Hostname(); h != "0123456789ab" {
		t.Errorf("hostname without a config %q", h)
	}
}
