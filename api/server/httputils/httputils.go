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

// ReadJSON decodes a JSON request body into v, as Docker does: the body
// must be application/json (a request without a Content-Type only when its
// body is empty), one JSON value, and nothing but white space after it.
// Each of these is a 400, checked before the handler looks anything up. An
// empty body is allowed when allowEmpty is set. A body over the route's
// limit (LimitBody) is a 413, even when what is over the limit follows a
// complete JSON value.
func ReadJSON(r *http.Request, v any, allowEmpty bool) error {
	ct := r.Header.Get("Content-Type")
	if ct != "" {
		if err := checkJSONType(ct); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(v)
	switch {
	case statusOf(err) != 0:
		return err
	case err == io.EOF:
		if allowEmpty {
			return nil
		}
		return errdefs.InvalidParameter(fmt.Errorf("invalid JSON: request body is empty"))
	case ct == "":
		// A body without its type: Docker says the (empty) type is malformed.
		return checkJSONType(ct)
	case err != nil:
		return errdefs.InvalidParameter(fmt.Errorf("invalid JSON: %w", err))
	}
	return readTrailer(io.MultiReader(dec.Buffered(), r.Body))
}

// checkJSONType refuses a Content-Type other than application/json
// (parameters such as charset are allowed), with Docker's messages.
func checkJSONType(ct string) error {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("malformed Content-Type header (%s): %w", ct, err))
	}
	if mt != "application/json" {
		return errdefs.InvalidParameter(fmt.Errorf("unsupported Content-Type header (%s): must be 'application/json'", ct))
	}
	return nil
}

// readTrailer reads what follows a JSON value to the end of the body: white
// space only, or it is a 400. Reading to the end matters: what follows the
// value counts against the body's limit too, and a body read to its end
// releases its read deadline. Any other error reading it is ignored.
func readTrailer(rest io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := rest.Read(buf)
		for _, b := range buf[:n] {
			switch b {
			case ' ', '\t', '\r', '\n':
			default:
				return errdefs.InvalidParameter(fmt.Errorf("unexpected content after JSON"))
			}
		}
		if err != nil {
			if statusOf(err) != 0 {
				return err
			}
			return nil
		}
	}
}

// NotImplemented is the answer of an endpoint of the Engine API that is
// routed but not built: 501, naming the method and the path as the client
// sent it (version prefix, names and escapes included), not the route's
// template.
func NotImplemented(r *http.Request) error {
	return errdefs.NotImplemented(fmt.Errorf("%s %s is not implemented by this engine yet", r.Method, r.URL.EscapedPath()))
}
