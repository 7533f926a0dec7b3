package systemd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testID = "0123456789abcdef0123456789abcdeffedcba9876543210fedcba9876543210"

func TestMachineName(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct{ in, want string }{
		{"/web", "web"},
		{"web", "web"},
		{"", "0123456789abcdef0123456789abcdef"},
		{"/", "0123456789abcdef0123456789abcdef"},
		{"x", "x"}, // short names never panic (the 2015 name[0:64] bug)
		{"/" + long, long[:64]},
		{"web_app", "web-app"},
		{"web__app", "web-app"},
		{"_web_", "web"},
		{"a._b", "a.b"},
		{"a_.b", "a-b"},
		{"a..b", "a.b"},
		{".hidden", "hidden"},
		{"-x-", "x"},
		{"ünïcode", "n-code"},
		{"___", "0123456789abcdef0123456789abcdef"},
		// Truncation must not leave a trailing '-' or '.'.
		{strings.Repeat("a", 63) + "_b", strings.Repeat("a", 63)},
	} {
		got := MachineName(tc.in, testID)
		if got != tc.want {
			t.Errorf("MachineName(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !validMachineName(got) {
			t.Errorf("MachineName(%q) = %q is not valid for machined", tc.in, got)
		}
	}
	if got := MachineName("", "short"); got != "short" {
		t.Errorf("short id: %q", got)
	}
	if got := MachineName("", ""); got != "container" {
		t.Errorf("empty id: %q", got)
	}
}

// validMachineName restates machined's rule independently of MachineName.
func validMachineName(s string) bool {
	if s == "" || len(s) > MaxMachineNameLen {
		return false
	}
	if strings.ContainsAny(s[:1], ".-") || strings.ContainsAny(s[len(s)-1:], ".-") {
		return false
	}
	if strings.Contains(s, "..") || strings.Contains(s, ".-") || strings.Contains(s, "-.") {
		return false
	}
	for _, c := range s {
		if !(c < 128 && isAlnum(byte(c)) || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func FuzzMachineName(f *testing.F) {
	f.Add("web_app", testID)
	f.Add("", "")
	f.Fuzz(func(t *testing.T, name, id string) {
		if got := MachineName(name, id); !validMachineName(got) {
			t.Fatalf("MachineName(%q, %q) = %q", name, id, got)
		}
	})
}

func TestMachineID(t *testing.T) {
	id := MachineID(testID)
	want := [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	if id != want {
		t.Fatalf("MachineID = %x, want %x", id, want)
	}
	// The bytes, not their ASCII: "01" is 0x01, never '0' (0x30).
	if id[0] == '0' {
		t.Fatal("MachineID sent ASCII")
	}
	for _, bad := range []string{"", "0123", strings.Repeat("z", 64)} {
		if MachineID(bad) != ([16]byte{}) {
			t.Errorf("MachineID(%q) should be zero", bad)
		}
	}
}

func TestBooted(t *testing.T) {
	old := runtimeDir
	defer func() { runtimeDir = old }()
	dir := t.TempDir()
	runtimeDir = filepath.Join(dir, "system")
	if Booted() {
		t.Fatal("Booted without the directory")
	}
	if err := os.WriteFile(runtimeDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if Booted() {
		t.Fatal("Booted with a file instead of a directory")
	}
	os.Remove(runtimeDir)
	if err := os.Mkdir(runtimeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if !Booted() {
		t.Fatal("not Booted with the directory")
	}
}
