package daemon

import (
	"time"

	timetypes "github.com/docker/docker/api/types/time"

	"github.com/sdengine/engine/pkg/errdefs"
)

// parseUntil reads an until value as Docker does: a Unix time (with
// fraction), an RFC 3339 date or time, or a duration before now ("10m").
func parseUntil(v string) (time.Time, error) {
	ts, err := timetypes.GetTimestamp(v, time.Now())
	if err != nil {
		return time.Time{}, errdefs.InvalidParameter(err)
	}
	sec, nsec, err := timetypes.ParseTimestamps(ts, 0)
	if err != nil {
		return time.Time{}, errdefs.InvalidParameter(err)
	}
	return time.Unix(sec, nsec), nil
}
