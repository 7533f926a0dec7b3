// Package timeutil parses the time values the Engine API accepts.
package timeutil

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Parse reads Docker's since/until values: a Unix time with an optional
// fraction, an RFC 3339 time, or a duration before now ("10m").
// The empty string gives the zero time.
func Parse(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errdefs.InvalidParameter(fmt.Errorf("invalid time value %q", s))
}
