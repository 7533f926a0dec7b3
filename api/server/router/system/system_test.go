package system

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/docker/docker/api/types"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
)

type fakeSystem struct{}

func (fakeSystem) SystemInfo(context.Context) (*backend.Info, error) {
	info := &backend.Info{NumberOfHooks: 2}
	info.OSType = "linux"
	return info, nil
}

func (fakeSystem) SystemVersion(context.Context) types.Version { return types.Version{} }

// Clients older than API 1.50 are given BridgeNfIptables and
// BridgeNfIp6tables (false), as Docker gives them; newer ones are not.
func TestInfoLegacyFields(t *testing.T) {
	r := &systemRouter{b: fakeSystem{}}
	for _, tc := range []struct {
		version string
		legacy  bool
	}{{"1.49", true}, {"1.24", true}, {"1.50", false}, {"1.51", false}} {
		rec := httptest.NewRecorder()
		ctx := httputils.WithVersion(context.Background(), tc.version)
		if err := r.info(ctx, rec, httptest.NewRequest(http.MethodGet, "/info", nil), nil); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"BridgeNfIptables", "BridgeNfIp6tables"} {
			v, found := got[k]
			if found != tc.legacy || (found && v != false) {
				t.Errorf("API %s: %s = %v (present %v), want present %v and false", tc.version, k, v, found, tc.legacy)
			}
		}
		if got["OSType"] != "linux" || got["NumberOfDockerHooks"] != float64(2) {
			t.Errorf("API %s: the rest of the info is lost: %v", tc.version, got)
		}
	}
}
