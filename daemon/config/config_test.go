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

// TestTLSMode: tlsverify given at all turns TLS on, verifying unless it is
// false; tls alone verifies; tls=false alone is plain HTTP said out loud.
func TestTLSMode(t *testing.T) {
	for _, c := range []struct {
		json string
		want TLSMode
	}{
		{`{}`, TLSModeUnset},
		{`{"tls":false}`, TLSModeOff},
		{`{"tls":true}`, TLSModeVerify},
		{`{"tlsverify":true}`, TLSModeVerify},
		{`{"tlsverify":false}`, TLSModeNoVerify},
		{`{"tls":false,"tlsverify":true}`, TLSModeVerify},
		{`{"tls":true,"tlsverify":false}`, TLSModeNoVerify},
	} {
		p := filepath.Join(t.TempDir(), "daemon.json")
		os.WriteFile(p, []byte(c.json), 0o644)
		cfg := Default()
		if err := cfg.LoadFile(p, true); err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		if got := cfg.TLSMode(); got != c.want {
			t.Errorf("%s: mode %d, want %d", c.json, got, c.want)
		}
	}
	p := filepath.Join(t.TempDir(), "daemon.json")
	os.WriteFile(p, []byte(`{"tlscacert":"/a/ca.pem","tlscert":"/a/c.pem","tlskey":"/a/k.pem"}`), 0o644)
	cfg := Default()
	if err := cfg.LoadFile(p, true); err != nil || cfg.TLSCACert != "/a/ca.pem" || cfg.TLSCert != "/a/c.pem" || cfg.TLSKey != "/a/k.pem" {
		t.Errorf("TLS files from daemon.json: %+v %v", cfg, err)
	}
}
