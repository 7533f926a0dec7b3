package hooks

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// writeHook writes an executable shell script named name into dir.
func writeHook(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	b := writeHook(t, dir, "b-second", "true")
	a := writeHook(t, dir, "a-first", "true")
	writeHook(t, dir, ".hidden", "true")
	if err := os.WriteFile(filepath.Join(dir, "c-not-exec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := writeHook(t, t.TempDir(), "elsewhere", "true")
	for name, to := range map[string]string{
		"e-link":     target,                           // symlink to an executable: a hook
		"f-dangling": filepath.Join(dir, "no-such"),    // dangling: not a hook
		"g-linkdir":  filepath.Join(dir, "d-dir"),      // to a directory: not a hook
		"h-linkdata": filepath.Join(dir, "c-not-exec"), // to a non-executable: not a hook
	} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Discover([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a, b, filepath.Join(dir, "e-link")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Discover = %q, want %q", got, want)
	}
}

func TestDiscoverFirstExistingDir(t *testing.T) {
	root := t.TempDir()
	notDir := filepath.Join(root, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	first, second := filepath.Join(root, "first"), filepath.Join(root, "second")
	for _, d := range []string{first, second} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeHook(t, second, "only-in-second", "true")
	dirs := []string{filepath.Join(root, "missing"), notDir, first, second}
	if d := Dir(dirs); d != first {
		t.Fatalf("Dir = %q, want %q", d, first)
	}
	// The first existing directory wins even when it is empty.
	if got, err := Discover(dirs); err != nil || len(got) != 0 {
		t.Fatalf("Discover = %q, %v; want none", got, err)
	}
	if got, err := Discover(dirs[3:]); err != nil || len(got) != 1 {
		t.Fatalf("Discover = %q, %v; want one", got, err)
	}
	if got, err := Discover([]string{filepath.Join(root, "missing")}); err != nil || got != nil {
		t.Fatalf("no directory: %q, %v", got, err)
	}
}
