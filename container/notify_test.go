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
