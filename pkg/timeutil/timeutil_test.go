package timeutil

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	cases := map[string]time.Time{
		"1764756435.850150948":           time.Unix(1764756435, 850150948),
		"1764756435.5":                   time.Unix(1764756435, 500000000),
		"1764756435":                     time.Unix(1764756435, 0),
		"10m":                            now.Add(-10 * time.Minute),
		"2026-12-03T10:27:15.850150948Z": time.Date(2026, 12, 3, 10, 27, 15, 850150948, time.UTC),
	}
	for in, want := range cases {
		got, err := Parse(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "12.", "1.1234567890"} {
		if _, err := Parse(bad, now); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
