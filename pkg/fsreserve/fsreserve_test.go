package fsreserve

import (
	"strings"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Reserve{
		"5%": {Percent: 5}, " 0.5 %": {Percent: 0.5}, "0%": {}, "0": {},
		"2GB": {Bytes: 2 << 30}, "512m": {Bytes: 512 << 20}, "1048576": {Bytes: 1 << 20},
	} {
		got, err := Parse(in)
		if err != nil || got.Percent != want.Percent || got.Bytes != want.Bytes {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-1%", "100%", "150%", "5%%", "-2GB", "NaN%", "1x"} {
		if _, err := Parse(in); !errdefs.IsInvalidParameter(err) {
			t.Errorf("Parse(%q): %v, want an InvalidParameter error", in, err)
		}
	}
	if r, _ := Parse("2GB"); r.String() != "2GB" {
		t.Errorf("String %q", r.String())
	}
	if !(Reserve{}).IsZero() || (Reserve{Percent: 1}).IsZero() {
		t.Error("IsZero")
	}
}

func TestCheck(t *testing.T) {
	sp := Space{Size: 1000 << 20, Avail: 100 << 20, Inodes: 1000, FreeInod: 500}
	Statfs = func(string) (Space, error) { return sp, nil }
	defer func() { Statfs = defaultStatfs }()

	five := Reserve{Percent: 5} // 50 MiB
	if err := five.Check("/x", 40<<20); err != nil {
		t.Fatalf("100 MiB free, 50 reserved, 40 more: %v", err)
	}
	err := five.Check("/x", 60<<20)
	if !IsError(err) || errdefs.ClassOf(err) != errdefs.ClassUnavailable {
		t.Fatalf("60 more would cross the reserve: %v", err)
	}
	for _, s := range []string{"--min-free-space=5%", "50MiB", "100MiB free of 1000MiB", "/x"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if err := (Reserve{Bytes: 200 << 20}).Check("/x", 0); !IsError(err) {
		t.Errorf("already below a size reserve: %v", err)
	}
	if err := (Reserve{}).Check("/x", 1<<40); err != nil {
		t.Errorf("zero reserve: %v", err)
	}
	sp.FreeInod = 40
	if err := five.Check("/x", 0); !IsError(err) || !strings.Contains(err.Error(), "inodes") {
		t.Errorf("inodes below 5%%: %v", err)
	}
	if err := (Reserve{Bytes: 1}).Check("/x", 0); err != nil {
		t.Errorf("a size reserve does not count inodes: %v", err)
	}
}

var defaultStatfs = Statfs
