package logger

import (
	"path/filepath"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

// The cri driver is registered, checks its options, and is the one
// driver that reopens.
func TestCRIDriver(t *testing.T) {
	if err := Validate("cri", map[string]string{"path": "/var/log/pods/x/c/0.log"}); err != nil {
		t.Fatal(err)
	}
	if err := Validate("cri", nil); !errdefs.IsInvalidParameter(err) {
		t.Fatalf("no path: %v", err)
	}
	if err := CheckReadable("cri"); err != nil {
		t.Fatal(err)
	}
	if err := CheckReopenable("cri"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"json-file", "local", "journald", "none"} {
		if err := CheckReopenable(name); errdefs.ClassOf(err) != errdefs.ClassNotImplemented {
			t.Errorf("%s: %v, want NotImplemented", name, err)
		}
	}
	p := filepath.Join(t.TempDir(), "c", "0.log")
	l, err := New(Info{Driver: "cri", Config: map[string]string{"path": p}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := Reopen(l); err != nil {
		t.Fatal(err)
	}
	jl, err := New(Info{Driver: "json-file", LogPath: filepath.Join(t.TempDir(), "j.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer jl.Close()
	if err := Reopen(jl); errdefs.ClassOf(err) != errdefs.ClassNotImplemented {
		t.Fatalf("json-file: %v", err)
	}
	if err := Reopen(nil); errdefs.ClassOf(err) != errdefs.ClassNotImplemented {
		t.Fatalf("none: %v", err)
	}
}
