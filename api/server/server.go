// Package server serves the Docker Engine API: routing with gorilla/mux,
// API version negotiation, and Docker's error format.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/versions"
	"github.com/gorilla/mux"

	"github.com/sdengine/engine/api"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Server is the HTTP side of the daemon.
type Server struct {
	handler http.Handler
	limits  Limits
	mu      sync.Mutex // guards servers: Serve runs once per listener, concurrently
	servers []*http.Server
	closed  bool
}

// New builds the handler from the routers, with DefaultLimits (and the
// test knobs of limitsFromEnv).
func New(routers ...router.Router) *Server {
	return newServer(limitsFromEnv(), routers...)
}

func newServer(limits Limits, routers ...router.Router) *Server {
	s := &Server{limits: limits}
	m := mux.NewRouter()
	for _, rt := range routers {
		for _, r := range rt.Routes() {
			h := s.makeHandler(r)
			m.Path("/v{version:[0-9.]+}" + r.Path).Methods(r.Method).Handler(h)
			m.Path(r.Path).Methods(r.Method).Handler(h)
		}
	}
	// Endpoints of the Engine API that this engine does not have yet answer
	// 501 naming themselves, so a client sees what is missing instead of a
	// confusing 404.
	for _, u := range unimplemented {
		method, path, _ := strings.Cut(u, " ")
		// It reads no body: the answer must be this 501 whatever was sent
		// (a build context, an archive), never a 413.
		h := s.makeHandler(router.Route{Handler: notImplemented, Body: router.BodyStream})
		m.Path("/v{version:[0-9.]+}" + path).Methods(method).Handler(h)
		m.Path(path).Methods(method).Handler(h)
	}
	// Docker answers OPTIONS (CORS preflight) on every path with an empty
	// 200, after the version check like any other route.
	options := s.makeHandler(router.Route{Handler: optionsOK})
	m.Path("/v{version:[0-9.]+}/{anyroute:.*}").Methods(http.MethodOptions).Handler(options)
	m.Path("/{anyroute:.*}").Methods(http.MethodOptions).Handler(options)
	// An unknown path, and a known path asked with a method it does not
	// serve, are both 404 {"message":"page not found"} in Docker (never
	// 405), without the version headers.
	m.NotFoundHandler = http.HandlerFunc(pageNotFound)
	m.MethodNotAllowedHandler = http.HandlerFunc(pageNotFound)
	s.handler = m
	return s
}

// Handler exposes the routing for tests.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on l until it is closed, with the server's Limits: the
// header and idle timeouts, and the cap on connections that have not sent
// a request header yet. There is no read or write timeout on a request as
// a whole: a response streams for as long as it lasts (logs -f, attach),
// and so does a streamed body (import, load).
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.limits.ReadHeaderTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
		// A start may come with descriptors for the container
		// (api/fdpass), which only a unix connection carries.
		ConnContext: httputils.WithConn,
	}
	l = httputils.FDListener{Listener: l}
	if s.limits.MaxPending > 0 {
		g := newConnGate(l, s.limits.MaxPending, s.limits.EvictAfter)
		srv.ConnState = g.state
		l = g
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	err := srv.Serve(l)
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}

// Close stops accepting requests on every listener, including one whose
// Serve has not begun yet; hijacked streams are left to end on their own.
func (s *Server) Close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	servers := s.servers
	s.mu.Unlock()
	for _, srv := range servers {
		_ = srv.Shutdown(ctx)
	}
}

func (s *Server) makeHandler(r router.Route) http.Handler {
	limit, stall := s.limits.Body[r.Body], s.limits.BodyStall
	if limit <= 0 {
		// A stream may pause for as long as its producer needs.
		stall = 0
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		vars := mux.Vars(req)
		version := vars["version"]
		if version == "" {
			version = api.DefaultVersion
		}
		if versions.LessThan(version, api.MinVersion) {
			httputils.WriteError(w, req, errdefs.InvalidParameter(fmt.Errorf(
				"client version %s is too old. Minimum supported API version is %s, please upgrade your client to a newer version", version, api.MinVersion)))
			return
		}
		if versions.GreaterThan(version, api.DefaultVersion) {
			httputils.WriteError(w, req, errdefs.InvalidParameter(fmt.Errorf(
				"client version %s is too new. Maximum supported API version is %s", version, api.DefaultVersion)))
			return
		}
		w.Header().Set("Server", "Docker/"+api.EngineVersion+" (linux)")
		w.Header().Set("Api-Version", api.DefaultVersion)
		w.Header().Set("Ostype", "linux")
		// Before anything reads the body, ParseForm included.
		body, err := httputils.LimitBody(w, req, limit, stall)
		if err != nil {
			httputils.WriteError(w, req, err)
			return
		}
		defer body.Done()
		if err := req.ParseForm(); err != nil {
			httputils.WriteError(w, req, errdefs.InvalidParameter(fmt.Errorf("parse query: %w", err)))
			return
		}
		ctx := httputils.WithVersion(req.Context(), version)
		slog.Debug("API request", "method", req.Method, "path", req.URL.Path)
		defer func() {
			// A handler bug must cost one request, never the daemon.
			if p := recover(); p != nil {
				slog.Error("panic serving request", "method", req.Method, "path", req.URL.Path, "panic", p)
				httputils.WriteError(w, req, fmt.Errorf("internal error: %v", p))
			}
		}()
		if err := r.Handler(ctx, w, req, vars); err != nil {
			httputils.WriteError(w, req, err)
		}
	})
}

func pageNotFound(w http.ResponseWriter, r *http.Request) {
	httputils.WriteError(w, r, errdefs.NotFound(fmt.Errorf("page not found")))
}

func optionsOK(_ context.Context, w http.ResponseWriter, _ *http.Request, _ map[string]string) error {
	w.WriteHeader(http.StatusOK)
	return nil
}

// notImplemented answers an endpoint of the Engine API that is routed but
// not built: 501.
func notImplemented(_ context.Context, _ http.ResponseWriter, r *http.Request, _ map[string]string) error {
	return httputils.NotImplemented(r)
}

// unimplemented lists Engine API endpoints not built yet.
var unimplemented = []string{
	"POST /build/prune",
	"POST /build/cancel",
	"GET /images/search",
	"GET /distribution/{name:.*}/json",
	"POST /containers/{name:.*}/copy",
	"GET /plugins",
	"GET /swarm",
	"POST /swarm/init",
	"GET /nodes",
	"GET /services",
	"GET /tasks",
	"GET /secrets",
	"GET /configs",
	"POST /session",
}
