package distribution

import (
	"strings"
	"testing"

	"github.com/distribution/reference"
)

func TestMirrorsFor(t *testing.T) {
	s, err := New(Config{
		Mirrors:    []string{"https://hub-mirror.example"},
		MirrorsFor: map[string][]string{"registry.k8s.io": {"http://127.0.0.1:5000", "https://m2.example"}, "index.docker.io": {"https://hub2.example"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hosts := func(ref string) string {
		named, err := reference.ParseNormalizedNamed(ref)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ep := range s.endpoints(named) {
			h := ep.host
			if ep.mirror {
				h += "(mirror)"
			}
			out = append(out, h)
		}
		return strings.Join(out, " ")
	}
	for ref, want := range map[string]string{
		"registry.k8s.io/pause:3.10": "127.0.0.1:5000(mirror) m2.example(mirror) registry.k8s.io",
		"busybox":                    "hub-mirror.example(mirror) hub2.example(mirror) docker.io",
		"gcr.io/x/y":                 "gcr.io",
	} {
		if got := hosts(ref); got != want {
			t.Errorf("endpoints of %s = %q, want %q", ref, got, want)
		}
	}
	if !s.isInsecure("127.0.0.1:5000") || s.isInsecure("m2.example") {
		t.Error("an http:// mirror is spoken to in plain HTTP, an https:// one is not")
	}
	sc := s.ServiceConfig()
	if got := sc.IndexConfigs["registry.k8s.io"].Mirrors; strings.Join(got, " ") != "http://127.0.0.1:5000/ https://m2.example/" {
		t.Errorf("info mirrors of registry.k8s.io = %v", got)
	}
	if hub := sc.IndexConfigs["docker.io"]; !hub.Official || !hub.Secure || len(hub.Mirrors) != 2 {
		t.Errorf("info of docker.io = %+v", hub)
	}
}

func TestMirrorsForInvalid(t *testing.T) {
	for _, c := range []struct {
		mirrors map[string][]string
		want    string
	}{
		{map[string][]string{"gcr.io": {"http://127.0.0.1:5000/sub"}}, "has no path"},
		{map[string][]string{"gcr.io": {"ftp://x"}}, "not a valid URI"},
		{map[string][]string{"": {"http://x"}}, "must be host[:port]"},
		{map[string][]string{"a/b": {"http://x"}}, "must be host[:port]"},
	} {
		if _, err := New(Config{MirrorsFor: c.mirrors}, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error with %q", c.mirrors, err, c.want)
		}
	}
}
