package systemdprofile

import (
	"os"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestClosedRun(t *testing.T) {
	dir := t.TempDir()
	bind := func(dst string) []specs.Mount {
		return []specs.Mount{{Destination: dst, Type: "bind", Source: dir, Options: []string{"rbind", "rw"}}}
	}
	for _, tc := range []struct {
		name   string
		mode   os.FileMode
		mounts []specs.Mount
		want   bool
	}{
		{"0700 at /run", 0o700, bind("/run"), true},
		{"0750 at /run/", 0o750, bind("/run/"), true},
		{"0755 at /run", 0o755, bind("/run"), false},
		{"0711 at /run: searchable", 0o711, bind("/run"), false},
		{"0700 elsewhere", 0o700, bind("/run/x"), false},
		{"tmpfs at /run", 0o700, []specs.Mount{{Destination: "/run", Type: "tmpfs", Source: "tmpfs"}}, false},
		{"no mounts", 0o700, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			src, mode, closed := ClosedRun(tc.mounts)
			if closed != tc.want {
				t.Fatalf("ClosedRun = %q %v %v, want closed %v", src, mode, closed, tc.want)
			}
			if closed && (src != dir || mode != tc.mode) {
				t.Errorf("ClosedRun = %q %v, want %q %v", src, mode, dir, tc.mode)
			}
		})
	}
}
