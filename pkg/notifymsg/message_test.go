package notifymsg

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	m, err := Parse([]byte("READY=1\nSTATUS=Startup finished in 1.2s\nMAINPID=42\nWATCHDOG_USEC=5000000\nEXTEND_TIMEOUT_USEC=10\nX_SYSTEMD_UNIT_ACTIVE=basic.target\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Message{Ready: true, Status: "Startup finished in 1.2s", HasStatus: true, MainPID: 42, WatchdogUsec: 5000000, ExtendTimeoutUsec: 10}
	if m != want {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	for _, bad := range []string{
		"", "garbage", "READY=1\nnonsense", "READY=1\x00", "STATUS=\xff\xfe",
		"X_SYSTEMD_UNIT_ACTIVE=basic.target", // nothing the engine understands
		"READY=2", "MAINPID=-1", "MAINPID=abc", "WATCHDOG_USEC=0",
		strings.Repeat("A", MaxMessage+1),
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%.40q) accepted", bad)
		}
	}
	long, err := Parse([]byte("STATUS=" + strings.Repeat("é", 1000)))
	if err != nil || len(long.Status) > maxStatus || !strings.HasPrefix(long.Status, "é") || strings.ContainsRune(long.Status, 0xfffd) {
		t.Fatalf("long STATUS: %v %d", err, len(long.Status))
	}
}

func TestFormatAndAttributes(t *testing.T) {
	m := Message{Ready: true, Stopping: true, Reloading: true, Watchdog: true, Status: "s", HasStatus: true, MainPID: 7, WatchdogUsec: 3, ExtendTimeoutUsec: 4}
	if got := FromAttributes(m.Attributes()); got != m {
		t.Fatalf("round trip: %+v", got)
	}
	if got, want := m.Format(99), "MAINPID=99\nSTATUS=s\nWATCHDOG_USEC=3\nEXTEND_TIMEOUT_USEC=4\nRELOADING=1\nSTOPPING=1\nREADY=1\nWATCHDOG=1"; got != want {
		t.Fatalf("Format: %q", got)
	}
	if _, ok := (Message{Ready: true}).Attributes()["STATUS"]; ok {
		t.Fatal("STATUS attribute without STATUS=")
	}
}
