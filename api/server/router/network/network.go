// Package network routes /networks/...: list, inspect, create, connect,
// disconnect, remove and prune.
package network

import (
	"context"
	"fmt"
	"net/http"

	networktypes "github.com/docker/docker/api/types/network"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
)

type networkRouter struct{ b backend.Networks }

// New returns the network router.
func New(b backend.Networks) router.Router { return &networkRouter{b: b} }

func (n *networkRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodGet, Path: "/networks", Handler: n.list},
		// Before {id}, which would take the trailing slash for an empty ID.
		{Method: http.MethodGet, Path: "/networks/", Handler: n.list},
		{Method: http.MethodGet, Path: "/networks/{id:.*}", Handler: n.inspect},
		{Method: http.MethodPost, Path: "/networks/create", Handler: n.create},
		{Method: http.MethodPost, Path: "/networks/prune", Handler: n.prune},
		{Method: http.MethodPost, Path: "/networks/{id:.*}/connect", Handler: n.connect},
		{Method: http.MethodPost, Path: "/networks/{id:.*}/disconnect", Handler: n.disconnect},
		{Method: http.MethodDelete, Path: "/networks/{id:.*}", Handler: n.remove},
	}
}

func (n *networkRouter) list(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	list, err := n.b.NetworkList(ctx, f)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, list)
}

func (n *networkRouter) inspect(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	nw, err := n.b.NetworkInspect(ctx, vars["id"])
	if err != nil {
		return err
	}
	// Every network here is local: asking for another scope finds none.
	if s := r.FormValue("scope"); s != "" && s != nw.Scope {
		return errdefs.NotFound(fmt.Errorf("network %s not found", vars["id"]))
	}
	return httputils.WriteJSON(w, http.StatusOK, nw)
}

// predefined are the names Docker reserves for its own networks.
var predefined = map[string]bool{"bridge": true, "host": true, "none": true, "default": true}

// create refuses what Docker refuses whatever the driver (malformed, no
// name, a predefined name) before the daemon sees the request.
func (n *networkRouter) create(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var req networktypes.CreateRequest
	if err := httputils.ReadJSON(r, &req, true); err != nil {
		return err
	}
	if req.Name == "" {
		return errdefs.InvalidParameter(fmt.Errorf("invalid name: name is empty"))
	}
	if predefined[req.Name] {
		return errdefs.Forbidden(fmt.Errorf("operation is not permitted on predefined %s network ", req.Name))
	}
	resp, err := n.b.NetworkCreate(ctx, req)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusCreated, resp)
}

func (n *networkRouter) connect(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var req networktypes.ConnectOptions
	if err := httputils.ReadJSON(r, &req, true); err != nil {
		return err
	}
	if _, err := n.b.NetworkInspect(ctx, vars["id"]); err != nil {
		return err
	}
	if req.Container == "" {
		return errdefs.NotFound(fmt.Errorf("No such container: "))
	}
	if err := n.b.NetworkConnect(ctx, vars["id"], req.Container, req.EndpointConfig); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (n *networkRouter) disconnect(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var req networktypes.DisconnectOptions
	if err := httputils.ReadJSON(r, &req, true); err != nil {
		return err
	}
	if _, err := n.b.NetworkInspect(ctx, vars["id"]); err != nil && !req.Force {
		return err
	}
	if req.Container == "" {
		return errdefs.NotFound(fmt.Errorf("No such container: "))
	}
	if err := n.b.NetworkDisconnect(ctx, vars["id"], req.Container, req.Force); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// remove refuses a predefined network as Docker does.
func (n *networkRouter) remove(ctx context.Context, w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	nw, err := n.b.NetworkInspect(ctx, vars["id"])
	if err != nil {
		return err
	}
	if predefined[nw.Name] {
		return errdefs.Forbidden(fmt.Errorf("%s is a pre-defined network and cannot be removed", nw.Name))
	}
	if err := n.b.NetworkRemove(ctx, nw.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (n *networkRouter) prune(ctx context.Context, w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	f, err := httputils.Filters(r)
	if err != nil {
		return err
	}
	rep, err := n.b.NetworksPrune(ctx, f)
	if err != nil {
		return err
	}
	return httputils.WriteJSON(w, http.StatusOK, rep)
}
