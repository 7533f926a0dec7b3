// Package timeutil parses the time values the Engine API accepts.
package timeutil

import (
	"fmt"
	"strconv"
	"strings"
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
	if t, ok := parseUnix(s); ok {
		return t, nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errdefs.InvalidParameter(fmt.Errorf("invalid time value %q", s))
}

// parseUnix reads "SECONDS[.FRACTION]" exactly: a float64 has too few
// digits for nanoseconds since 1970, and a log entry would then fall on
// the wrong side of --since.
func parseUnix(s string) (time.Time, bool) {
	secPart, fracPart, hasFrac := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secPart, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var nsec int64
	if hasFrac {
		if fracPart == "" || len(fracPart) > 9 {
			return time.Time{}, false
		}
		n, err := strconv.ParseUint(fracPart, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		nsec = int64(n)
		for i := len(fracPart); i < 9; i++ {
			nsec *= 10
		}
	}
	return time.Unix(sec, nsec), true
}
