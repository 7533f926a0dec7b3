package podinfra

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain lets the test binary serve as the infra process (Start runs
// os.Args[0] pod-infra in the tests).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		Main()
	}
	os.Exit(m.Run())
}

func TestStartAndStop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("a new PID namespace needs root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(self)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Alive() {
		t.Fatal("infra process not alive after Start")
	}
	// It is PID 1 of a namespace of its own.
	own, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	its, err := os.Readlink(p.NSPath())
	if err != nil {
		t.Fatal(err)
	}
	if its == own {
		t.Errorf("infra process shares the test's PID namespace %s", own)
	}
	status, _ := os.ReadFile("/proc/" + itoa(p.PID) + "/status")
	if !strings.Contains(string(status), "NSpid:\t"+itoa(p.PID)+"\t1\n") {
		t.Errorf("infra process is not PID 1 of its namespace:\n%s", status)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Error("infra process alive after Stop")
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	// A record whose start time does not match is not that process.
	other := &Process{PID: os.Getpid(), StartTime: 1}
	if other.Alive() {
		t.Error("a PID with another start time counts as alive")
	}
	if err := other.Stop(); err != nil {
		t.Errorf("Stop of a reused PID: %v", err)
	}
	if err := unix.Kill(os.Getpid(), 0); err != nil {
		t.Errorf("Stop of a reused PID signalled it: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
