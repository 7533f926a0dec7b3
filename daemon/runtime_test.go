package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/internal/testenv"
)

func TestParsePS(t *testing.T) {
	out := []byte(`UID        PID  PPID  C STIME TTY          TIME CMD
root         1     0  0 10:00 ?        00:00:01 /sbin/init splash
root      4242  4200  0 10:01 ?        00:00:00 sleep 1000
root      4243  4242  0 10:01 ?        00:00:00 sh -c echo hi there
`)
	resp, err := parsePS(out, []int{4242, 4243})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Titles) != 8 || len(resp.Processes) != 2 {
		t.Fatalf("got %+v", resp)
	}
	if got := resp.Processes[1][7]; got != "sh -c echo hi there" {
		t.Fatalf("command column %q", got)
	}
	if _, err := parsePS([]byte("USER COMMAND\nroot x\n"), nil); err == nil {
		t.Fatal("ps output without PID accepted")
	}
}

func TestOverlayChanges(t *testing.T) {
	root := t.TempDir()
	lower, upper := filepath.Join(root, "lower"), filepath.Join(root, "upper")
	for _, d := range []string{"lower/etc", "lower/bin", "upper/etc", "upper/foo", "upper/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lower/etc/passwd", "root")
	write("lower/bin/sh", "sh")
	write("upper/etc/passwd", "root\nme")
	write("upper/etc/hostname", "") // the runtime's mountpoint
	write("upper/foo/bar", "xyzzy")
	err := unix.Mknod(filepath.Join(upper, "bin", "sh"), unix.S_IFCHR, 0)
	testenv.Require(t, err == nil, fmt.Sprintf("CAP_MKNOD to make an overlay whiteout (run as root): mknod: %v", err))
	got, err := overlayChanges(upper, []string{lower})
	if err != nil {
		t.Fatal(err)
	}
	want := []containertypes.FilesystemChange{
		{Kind: containertypes.ChangeModify, Path: "/bin"},
		{Kind: containertypes.ChangeDelete, Path: "/bin/sh"},
		{Kind: containertypes.ChangeModify, Path: "/etc"},
		{Kind: containertypes.ChangeModify, Path: "/etc/passwd"},
		{Kind: containertypes.ChangeAdd, Path: "/foo"},
		{Kind: containertypes.ChangeAdd, Path: "/foo/bar"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes\n got %+v\nwant %+v", got, want)
	}
	// Only the runtime's mountpoint below /etc: /etc is not listed.
	os.Remove(filepath.Join(upper, "etc", "passwd"))
	got, _ = overlayChanges(upper, []string{lower})
	for _, c := range got {
		if c.Path == "/etc" || c.Path == "/etc/hostname" {
			t.Fatalf("listed %+v", c)
		}
	}
}
