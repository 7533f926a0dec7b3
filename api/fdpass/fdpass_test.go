package fdpass

import (
	"net/http"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		h       map[string]string
		ok      bool
		want    Request
		wantErr string
	}{
		{h: nil, ok: false},
		{h: map[string]string{HeaderFiles: "2"}, ok: true, want: Request{Files: 2}},
		{h: map[string]string{HeaderFiles: "2", HeaderListenFds: "1", HeaderListenFdNames: "web"}, ok: true, want: Request{Files: 2, Listen: 1, Names: []string{"web"}}},
		{h: map[string]string{HeaderListenFds: "1"}, ok: true, wantErr: "without"},
		{h: map[string]string{HeaderFiles: "x"}, ok: true, wantErr: "invalid"},
		{h: map[string]string{HeaderFiles: "0"}, ok: true, wantErr: "1 to 253"},
		{h: map[string]string{HeaderFiles: "254"}, ok: true, wantErr: "1 to 253"},
		{h: map[string]string{HeaderFiles: "1", HeaderListenFds: "2"}, ok: true, wantErr: "2 socket-activation descriptors out of 1"},
		{h: map[string]string{HeaderFiles: "2", HeaderListenFds: "2", HeaderListenFdNames: "a"}, ok: true, wantErr: "1 descriptor names for 2"},
		{h: map[string]string{HeaderFiles: "1", HeaderListenFds: "1", HeaderListenFdNames: "a\x01"}, ok: true, wantErr: "printable"},
	} {
		h := http.Header{}
		for k, v := range c.h {
			h.Set(k, v)
		}
		got, ok, err := Parse(h)
		if ok != c.ok {
			t.Errorf("%v: ok %v", c.h, ok)
		}
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: error %v, want %q", c.h, err, c.wantErr)
			}
			continue
		}
		if err != nil || got.Files != c.want.Files || got.Listen != c.want.Listen || strings.Join(got.Names, ":") != strings.Join(c.want.Names, ":") {
			t.Errorf("%v: %+v %v, want %+v", c.h, got, err, c.want)
		}
	}
	// Set and Parse agree.
	h := http.Header{}
	Request{Files: 3, Listen: 2, Names: []string{"a", "b"}}.Set(h)
	if r, ok, err := Parse(h); !ok || err != nil || r.Files != 3 || r.Listen != 2 || len(r.Names) != 2 {
		t.Errorf("round trip: %+v %v %v", r, ok, err)
	}
}
