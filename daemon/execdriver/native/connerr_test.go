package native

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

// A resize or signal that finds the shim's state directory already released
// (the daemon does that only after it recorded the exit) is a conflict, "is
// not running", not a fault.
func TestConnErrStateReleased(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	task := &Task{id: "c1", dir: dir}
	err := task.connErr(fmt.Errorf("open %s: %w", dir, syscall.ENOENT))
	if !errdefs.IsConflict(err) || err.Error() != "container c1 is not running" {
		t.Fatalf("released state: %v", err)
	}
	// The directory there but no shim answering and no exit: a fault.
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	err = task.connErr(fmt.Errorf("dial: %w", syscall.ECONNREFUSED))
	if errdefs.IsConflict(err) {
		t.Fatalf("live state directory: %v", err)
	}
}
