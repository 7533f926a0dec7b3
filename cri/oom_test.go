package cri

import (
	"os"
	"strings"
	"testing"
)

func TestClampOOMScoreAdj(t *testing.T) {
	for _, c := range []struct {
		req, floor int
		has        bool
		want       int
	}{
		{-997, 0, true, 0},
		{-997, 0, false, -997},
		{1000, 0, true, 1000},
		{-997, -500, true, -500},
		{-100, -500, true, -100},
	} {
		if got := clampOOMScoreAdj(c.req, c.floor, c.has); got != c.want {
			t.Errorf("clamp(%d, %d, %v) = %d, want %d", c.req, c.floor, c.has, got, c.want)
		}
	}
}

// The floor is there exactly when the process lacks CAP_SYS_RESOURCE.
func TestOOMFloorFollowsCapability(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	_, has := oomFloor()
	if strings.Contains(string(b), "CapEff:\t0000000000000000") {
		if !has {
			t.Error("no capabilities, but no floor")
		}
		return
	}
	if hasCap(capSysResource) == has {
		t.Errorf("CAP_SYS_RESOURCE %v and floor %v", hasCap(capSysResource), has)
	}
}
