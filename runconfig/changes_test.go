package runconfig

import (
	"reflect"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestApplyChanges(t *testing.T) {
	var cfg ocispec.ImageConfig
	err := ApplyChanges(&cfg, []string{
		`CMD ["/bin/sh", "-c", "echo hi"]`,
		`ENV A=1 B="two words"`,
		`ENV C 3`,
		`WORKDIR /srv`,
		`EXPOSE 80 53/udp`,
		`LABEL x=y`,
		`STOPSIGNAL RTMIN+3`,
		`ENTRYPOINT /bin/echo`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Cmd, []string{"/bin/sh", "-c", "echo hi"}) {
		t.Errorf("cmd %q", cfg.Cmd)
	}
	if !reflect.DeepEqual(cfg.Env, []string{"A=1", "B=two words", "C=3"}) {
		t.Errorf("env %q", cfg.Env)
	}
	if !reflect.DeepEqual(cfg.Entrypoint, []string{"/bin/sh", "-c", "/bin/echo"}) {
		t.Errorf("entrypoint %q", cfg.Entrypoint)
	}
	if _, ok := cfg.ExposedPorts["53/udp"]; !ok || len(cfg.ExposedPorts) != 2 {
		t.Errorf("ports %v", cfg.ExposedPorts)
	}
	if cfg.WorkingDir != "/srv" || cfg.Labels["x"] != "y" || cfg.StopSignal != "RTMIN+3" {
		t.Errorf("cfg %+v", cfg)
	}
	if err := ApplyChanges(&cfg, []string{"FROM x"}); err == nil {
		t.Error("FROM accepted")
	}
	if err := ApplyChanges(&cfg, []string{`CMD ["unterminated`}); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "A=1"}, []string{"A=2", "B=3"})
	if !reflect.DeepEqual(got, []string{"PATH=/bin", "A=2", "B=3"}) {
		t.Fatal(got)
	}
}
