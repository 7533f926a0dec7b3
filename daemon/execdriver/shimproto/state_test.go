package shimproto

import (
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/internal/testenv"
)

// The exit status is recorded, and read back, although the exec root
// filled up after the container started.
func TestExitStatusOnFullDisk(t *testing.T) {
	dir := testenv.SmallTmpfs(t, 64<<10)
	if st, err := ReadExit(dir); st != nil || err != nil {
		t.Fatalf("before the exit: %v, %v", st, err)
	}
	if err := ReserveExit(dir); err != nil {
		t.Fatal(err)
	}
	if st, err := ReadExit(dir); st != nil || err != nil {
		t.Fatalf("the reservation reads as an exit: %v, %v", st, err)
	}
	testenv.FillDisk(t, dir, 1<<20)
	want := execdriver.ExitStatus{Code: 0, ExitedAt: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), OOMKilled: true}
	if err := WriteExit(dir, want); err != nil {
		t.Fatalf("recording the exit on a full disk: %v", err)
	}
	got, err := ReadExit(dir)
	if err != nil || got == nil || *got != want {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
}
