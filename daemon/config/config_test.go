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

func TestMinFreeSpace(t *testing.T) {
	c := Default()
	if r, err := c.MinFreeSpaceReserve(); err != nil || r.Percent != 5 {
		t.Fatalf("default min-free-space: %+v %v", r, err)
	}
	p := filepath.Join(t.TempDir(), "daemon.json")
	os.WriteFile(p, []byte(`{"min-free-space":"2GB"}`), 0o644)
	if err := c.LoadFile(p, true); err != nil {
		t.Fatal(err)
	}
	if r, err := c.MinFreeSpaceReserve(); err != nil || r.Bytes != 2<<30 {
		t.Fatalf("min-free-space 2GB: %+v %v", r, err)
	}
	c.MinFreeSpace = "lots"
	if _, err := c.MinFreeSpaceReserve(); err == nil {
		t.Fatal("invalid min-free-space accepted")
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

// The search list and certs.d settings, under the Red Hat fork's keys.
func TestLoadRegistrySettings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "daemon.json")
	os.WriteFile(p, []byte(`{"add-registry":["a.example","b.example:5000"],"block-registry":["docker.io"],"registry-certs-dir":"/etc/x/certs.d"}`), 0o644)
	c := Default()
	if c.RegistryCertsDir != DefaultRegistryCertsDir {
		t.Fatalf("default certs.d %q", c.RegistryCertsDir)
	}
	if err := c.LoadFile(p, true); err != nil {
		t.Fatal(err)
	}
	if len(c.AddRegistries) != 2 || c.AddRegistries[1] != "b.example:5000" || len(c.BlockRegistries) != 1 || c.RegistryCertsDir != "/etc/x/certs.d" {
		t.Fatalf("%+v", c)
	}
}
