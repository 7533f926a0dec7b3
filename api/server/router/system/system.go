// Package system routes /_ping, /version and /info.
package system

import (
	"context"
	"net/http"

	"github.com/docker/docker/api/types/versions"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
)

type systemRouter struct{ b backend.System }

// New returns the system router.
func New(b backend.System) router.Router { return &systemRouter{b: b} }

func (s *systemRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodGet, Path: "/_ping", Handler: s.ping},
		{Method: http.MethodHead, Path: "/_ping", Handler: s.ping},
		{Method: http.MethodGet, Path: "/version", Handler: s.version},
		{Method: http.MethodGet, Path: "/info", Handler: s.info},
	}
}

func (s *systemRouter) ping(_ context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	w.Header().Set("Cache-Control", "no-cache, no-store, must-revalidate")
	w.Header().Set("Pragma", "no-cache")
	w.Header().Set("Builder-Version", "1")
	w.Header().Set("Docker-Experimental", "false")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", "0")
		return nil
	}
	_, err := w.Write([]byte("OK"))
	return err
}

func (s *systemRouter) version(ctx context.Context, w http.ResponseWriter, _ *http.Request, _ map[string]string) error {
	return httputils.WriteJSON(w, http.StatusOK, s.b.SystemVersion(ctx))
}

func (s *systemRouter) info(ctx context.Context, w http.ResponseWriter, _ *http.Request, _ map[string]string) error {
	info, err := s.b.SystemInfo(ctx)
	if err != nil {
		return err
	}
	if versions.LessThan(httputils.VersionFromContext(ctx), "1.50") {
		return httputils.WriteJSON(w, http.StatusOK, infoBefore150{Info: info})
	}
	return httputils.WriteJSON(w, http.StatusOK, info)
}

// infoBefore150 is /info for clients older than API 1.50, which still had
// BridgeNfIptables and BridgeNfIp6tables; Docker has reported them false
// since, and this engine has no bridge whose netfilter they describe.
type infoBefore150 struct {
	*backend.Info
	BridgeNfIptables  bool
	BridgeNfIp6tables bool
}
