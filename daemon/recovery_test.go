package daemon

import (
	"testing"
	"time"
)

func TestDecideRecovery(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	later := t0.Add(time.Second)
	for _, tc := range []struct {
		name     string
		running  bool
		finished time.Time
		found    shimFinding
		shimExit time.Time
		want     recoveryAction
	}{
		{"reconnect to a running container", true, time.Time{}, shimRunning, time.Time{}, adoptTask},
		{"start not recorded: the shim is the truth", false, time.Time{}, shimRunning, time.Time{}, adoptTask},
		{"restart not recorded: the shim is the truth", false, t0, shimRunning, time.Time{}, adoptTask},
		{"exited while the daemon was down", true, time.Time{}, shimExited, t0, recordExit},
		{"unrecorded start ran and exited", false, time.Time{}, shimExited, t0, recordExit},
		{"unrecorded restart ran and exited", false, t0, shimExited, later, recordExit},
		{"exit recorded, release cut short", false, t0, shimExited, t0, rollBack},
		{"start cut short before the process ran", false, time.Time{}, shimNotStarted, time.Time{}, rollBack},
		{"unusable shim of a stopped container", false, t0, shimBroken, time.Time{}, rollBack},
		{"running record, shim never started", true, time.Time{}, shimNotStarted, time.Time{}, recordLost},
		{"running record, shim unusable", true, time.Time{}, shimBroken, time.Time{}, recordLost},
		{"running record, no trace (reboot)", true, time.Time{}, shimNone, time.Time{}, recordLost},
		{"stopped container, nothing in the driver", false, t0, shimNone, time.Time{}, keepRecord},
		{"created container, nothing in the driver", false, time.Time{}, shimNone, time.Time{}, keepRecord},
	} {
		if got := decideRecovery(tc.running, tc.finished, tc.found, tc.shimExit); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
