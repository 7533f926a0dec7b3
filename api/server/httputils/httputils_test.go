package httputils

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestReadJSON(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		allowEmpty     bool
		want           string // "" = decoded; else the 400's message
	}{
		{name: "object", ct: "application/json", body: `{"a":1}`},
		{name: "charset", ct: "application/json; charset=utf-8", body: `{"a":1}`},
		{name: "white space after", ct: "application/json", body: "{\"a\":1} \r\n\t "},
		{name: "empty allowed", ct: "application/json", allowEmpty: true},
		{name: "empty allowed without a type", allowEmpty: true},
		{name: "white space only", ct: "application/json", body: "  \n", allowEmpty: true},
		{name: "empty refused", ct: "application/json", want: "invalid JSON: request body is empty"},
		{name: "text/plain", ct: "text/plain", body: `{}`, want: "unsupported Content-Type header (text/plain): must be 'application/json'"},
		{name: "text/plain even empty", ct: "text/plain", allowEmpty: true, want: "unsupported Content-Type header (text/plain): must be 'application/json'"},
		{name: "malformed type", ct: "application/", body: `{}`, want: "malformed Content-Type header (application/): mime: expected token after slash"},
		{name: "a body without a type", body: `{}`, want: "malformed Content-Type header (): mime: no media type"},
		{name: "invalid", ct: "application/json", body: `{invalid json`, want: "invalid JSON: invalid character 'i' looking for beginning of object key string"},
		{name: "trailing", ct: "application/json", body: `{} trailing content`, want: "unexpected content after JSON"},
		{name: "a second value", ct: "application/json", body: `{}{}`, want: "unexpected content after JSON"},
		{name: "a closing brace too many", ct: "application/json", body: `{}}`, want: "unexpected content after JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(tc.body))
			if tc.ct != "" {
				r.Header.Set("Content-Type", tc.ct)
			}
			var v map[string]any
			err := ReadJSON(r, &v, tc.allowEmpty)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("no error, want %q", tc.want)
			case err.Error() != tc.want || !errdefs.IsInvalidParameter(err):
				t.Fatalf("error %q (400: %v), want 400 %q", err, errdefs.IsInvalidParameter(err), tc.want)
			}
		})
	}
}

// What follows a value is read to the end of the body, so that it counts
// against the body's limit: a 413, not a 400 or a success.
func TestReadJSONTrailerCountsAgainstTheLimit(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(`{}`+strings.Repeat(" ", 100<<10)))
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = -1
	if _, err := LimitBody(httptest.NewRecorder(), r, 64<<10, 0); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := ReadJSON(r, &v, false); statusOf(err) != http.StatusRequestEntityTooLarge {
		t.Fatalf("got %v, want a 413", err)
	}
}
