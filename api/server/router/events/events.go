// Package events routes GET /events.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	timetypes "github.com/docker/docker/api/types/time"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
)

type eventsRouter struct{ b backend.Events }

// New returns the events router.
func New(b backend.Events) router.Router { return &eventsRouter{b: b} }

func (e *eventsRouter) Routes() []router.Route {
	return []router.Route{{Method: http.MethodGet, Path: "/events", Handler: e.events}}
}

// parseTime reads since/until as Docker takes them: a Unix time with
// optional nanoseconds, an RFC 3339 date or a duration before now.
func parseTime(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	ts, err := timetypes.GetTimestamp(v, now)
	if err != nil {
		return time.Time{}, errdefs.InvalidParameter(err)
	}
	sec, nsec, err := timetypes.ParseTimestamps(ts, -1)
	if err != nil {
		return time.Time{}, errdefs.InvalidParameter(err)
	}
	if sec == -1 {
		return time.Time{}, nil
	}
	return time.Unix(sec, nsec), nil
}

func (e *eventsRouter) events(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	now := time.Now()
	since, err := parseTime(r.FormValue("since"), now)
	if err != nil {
		return err
	}
	until, err := parseTime(r.FormValue("until"), now)
	if err != nil {
		return err
	}
	if !since.IsZero() && !until.IsZero() && until.Before(since) {
		return errdefs.InvalidParameter(fmt.Errorf("`since` time (%s) cannot be after `until` time (%s)", r.FormValue("since"), r.FormValue("until")))
	}
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	past, live, cancel, err := e.b.SubscribeEvents(since, until, f)
	if err != nil {
		return err
	}
	defer cancel()

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	// The answer starts at once, events or not (a client waits for the
	// headers before it reads).
	flush()
	enc := json.NewEncoder(w)
	for _, m := range past {
		if err := enc.Encode(m); err != nil {
			return nil
		}
	}
	flush()
	if !until.IsZero() && !until.After(now) {
		return nil
	}
	var timeout <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(until.Sub(now))
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case m := <-live:
			if !until.IsZero() && time.Unix(0, m.TimeNano).After(until) {
				return nil
			}
			if err := enc.Encode(m); err != nil {
				return nil
			}
			flush()
		case <-timeout:
			return nil
		case <-ctx.Done():
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}
