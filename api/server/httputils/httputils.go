// Package httputils holds the small pieces every API router shares:
// decoding parameters, writing JSON and errors, and hijacking a connection
// for attach and exec streams.
package httputils

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/filters"

	"github.com/sdengine/engine/pkg/errdefs"
)

// APIFunc is the signature of every endpoint: errors it returns are written
// in Docker's JSON form with the status their class maps to.
type APIFunc func(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error

type versionKey struct{}

// WithVersion stores the negotiated API version in ctx.
func WithVersion(ctx context.Context, v string) context.Context {
	return context.WithValue(ctx, versionKey{}, v)
}

// VersionFromContext returns the API version the client speaks.
func VersionFromContext(ctx context.Context) string {
	v, _ := ctx.Value(versionKey{}).(string)
	return v
}

// WriteJSON writes v with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// WriteError writes err as Docker does: {"message": "..."} and a status
// taken from its class.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status == 0 {
		status = errdefs.HTTPStatus(err)
	}
	if status >= 500 && status != http.StatusNotImplemented {
		slog.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		slog.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	if status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	if r.Close && statusOf(err) != 0 {
		refuseAndLinger(w, status, err)
		return
	}
	_ = WriteJSON(w, status, map[string]string{"message": err.Error()})
}

// BoolValue reads a query flag the way Docker does: "", "0", "no", "false",
// "none" are false, anything else is true.
func BoolValue(r *http.Request, k string) bool {
	s := strings.ToLower(strings.TrimSpace(r.FormValue(k)))
	return !(s == "" || s == "0" || s == "no" || s == "false" || s == "none")
}

// IntValue reads an integer query parameter, or def when absent.
func IntValue(r *http.Request, k string, def int) (int, error) {
	s := r.FormValue(k)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, errdefs.InvalidParameter(fmt.Errorf("invalid value for %s: %q: %w", k, s, err))
	}
	return n, nil
}

// Filters decodes the "filters" query parameter.
func Filters(r *http.Request) (filters.Args, error) {
	f, err := filters.FromJSON(r.FormValue("filters"))
	if err != nil {
		return f, errdefs.InvalidParameter(fmt.Errorf("invalid filters: %w", err))
	}
	return f, nil
}

// ReadJSON decodes a JSON request body into v; an empty body is allowed
// when allowEmpty is set. A wrong content type or malformed JSON is a 400;
// a body over the route's limit (LimitBody) a 413, even when what is over
// the limit follows a complete JSON value.
func ReadJSON(r *http.Request, v any, allowEmpty bool) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && mt != "text/plain") {
			return errdefs.InvalidParameter(fmt.Errorf("unsupported Content-Type header (%s): must be 'application/json'", ct))
		}
	}
	err := json.NewDecoder(r.Body).Decode(v)
	switch {
	case statusOf(err) != 0:
		return err
	case err == io.EOF:
		if allowEmpty {
			return nil
		}
		return errdefs.InvalidParameter(fmt.Errorf("invalid JSON: request body is empty"))
	case err != nil:
		return errdefs.InvalidParameter(fmt.Errorf("invalid JSON: %w", err))
	}
	// Read to the end: what follows the value counts against the limit
	// too, and a body read to its end releases its read deadline. Any
	// other error reading what follows a complete value is ignored.
	if _, err := io.Copy(io.Discard, r.Body); statusOf(err) != 0 {
		return err
	}
	return nil
}
