package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "daemon.json")
	os.WriteFile(p, []byte(`{"log-driver":"journald","data-root":"/x"}`), 0o644)
	c := Default()
	if err := c.LoadFile(p, true); err != nil {
		t.Fatal(err)
	}
	if c.LogDriver != "journald" || c.Root != "/x" || c.ExecRoot != DefaultExecRoot {
		t.Fatalf("%+v", c)
	}
	os.WriteFile(p, []byte(`{"log-drvier":"x"}`), 0o644)
	if err := Default().LoadFile(p, true); err == nil {
		t.Fatal("unknown key accepted")
	}
	if err := Default().LoadFile(filepath.Join(dir, "none.json"), false); err != nil {
		t.Fatal(err)
	}
	if err := Default().LoadFile(filepath.Join(dir, "none.json"), true); err == nil {
		t.Fatal("missing explicit file accepted")
	}
}
