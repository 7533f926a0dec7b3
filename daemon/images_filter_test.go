package daemon

import (
	"testing"
	"time"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestParseUntil(t *testing.T) {
	now := time.Now()
	for in, want := range map[string]time.Time{
		"1700000000":                     time.Unix(1700000000, 0),
		"1700000000.5":                   time.Unix(1700000000, 500000000),
		"2023-11-14T22:13:20.25Z":        time.Unix(1700000000, 250000000),
		"2023-11-14T22:13:20.000000001Z": time.Unix(1700000000, 1),
	} {
		got, err := parseUntil(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseUntil(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := parseUntil("10m"); err != nil || got.After(now.Add(-9*time.Minute)) || got.Before(now.Add(-11*time.Minute)) {
		t.Errorf("parseUntil(10m) = %v, %v", got, err)
	}
	if _, err := parseUntil("not-a-time"); !errdefs.IsInvalidParameter(err) {
		t.Errorf("bad until: %v", err)
	}
}
