package container

import "testing"

// A waiter reads the status of the exit it waited for, even when the
// container was started again (its state reset) before the waiter ran.
func TestNextExitKeepsItsStatus(t *testing.T) {
	c := &Container{}
	first := c.NextExit()
	c.State.ExitCode, c.State.Error = 5, ""
	c.NotifyExit()
	c.State.ExitCode = 0 // restarted
	select {
	case <-first.Done():
	default:
		t.Fatal("the exit did not close Done")
	}
	if first.Code != 5 {
		t.Fatalf("Code = %d, want 5", first.Code)
	}
	second := c.NextExit()
	if second == first {
		t.Fatal("the next exit is the one that already happened")
	}
	select {
	case <-second.Done():
		t.Fatal("the next exit is already done")
	default:
	}
}

// A rootfs hold and a removal exclude each other: a hold taken while a
// removal runs fails, and a removal sees a hold taken before it.
func TestRootfsHoldAndRemoval(t *testing.T) {
	c := &Container{}
	if !c.HoldRootfs() || !c.RootfsHeld() {
		t.Fatal("a hold on an idle container failed")
	}
	if c.SetRemovalInProgress() {
		t.Fatal("a removal was already in progress")
	}
	if !c.RootfsHeld() {
		t.Fatal("the removal does not see the hold taken before it")
	}
	if !c.ReleaseRootfs() {
		t.Fatal("releasing the only hold was not the last")
	}
	if c.HoldRootfs() {
		t.Fatal("a hold was taken while a removal runs")
	}
	if c.RootfsHeld() {
		t.Fatal("a refused hold is still counted")
	}
}
