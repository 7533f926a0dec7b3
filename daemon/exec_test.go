package daemon

import (
	"math"
	"testing"
)

// The start request's console size wins over the create request's, and a
// size too large for a winsize is clamped, not wrapped to a tiny one.
func TestExecConsoleSize(t *testing.T) {
	cases := []struct {
		created, started *[2]uint
		h, w             uint16
	}{
		{nil, nil, 0, 0},
		{&[2]uint{57, 123}, nil, 57, 123},
		{&[2]uint{57, 123}, &[2]uint{24, 80}, 24, 80},
		{nil, &[2]uint{24, 80}, 24, 80},
		{&[2]uint{math.MaxUint16 + 1, 80}, nil, math.MaxUint16, 80},
	}
	for _, c := range cases {
		if h, w := execConsoleSize(c.created, c.started); h != c.h || w != c.w {
			t.Errorf("%v %v: %d %d, want %d %d", c.created, c.started, h, w, c.h, c.w)
		}
	}
}
