package container

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Docker's messages for a bad resize, which its tests compare.
func TestSizeErrors(t *testing.T) {
	cases := []struct {
		h, w    *string
		wantErr string
	}{
		{nil, ptr("100"), `invalid resize height "": invalid syntax`},
		{ptr("100"), nil, `invalid resize width "": invalid syntax`},
		{ptr(""), ptr("100"), `invalid resize height "": invalid syntax`},
		{ptr("not-a-number"), ptr("100"), `invalid resize height "not-a-number": invalid syntax`},
		{ptr("100"), ptr("not-a-number"), `invalid resize width "not-a-number": invalid syntax`},
		{ptr("-100"), ptr("100"), `invalid resize height "-100": value out of range`},
		{ptr("100"), ptr("-100"), `invalid resize width "-100": value out of range`},
		{ptr("4294967296"), ptr("100"), `invalid resize height "4294967296": value out of range`},
		{ptr("100"), ptr("99999999999999999999999"), `invalid resize width "99999999999999999999999": value out of range`},
	}
	for _, c := range cases {
		v := url.Values{}
		if c.h != nil {
			v.Set("h", *c.h)
		}
		if c.w != nil {
			v.Set("w", *c.w)
		}
		_, _, err := size(httptest.NewRequest("POST", "/containers/x/resize?"+v.Encode(), nil))
		if err == nil || err.Error() != c.wantErr || !errdefs.IsInvalidParameter(err) {
			t.Errorf("%v: got %v, want %q (invalid parameter)", v, err, c.wantErr)
		}
	}
	h, w, err := size(httptest.NewRequest("POST", "/containers/x/resize?h=4294967295&w=0", nil))
	if err != nil || h != 4294967295 || w != 0 {
		t.Errorf("bounds: %d %d %v", h, w, err)
	}
}

func ptr(s string) *string { return &s }
