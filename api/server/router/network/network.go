// Package network routes /networks/...: the builtin networks are listed
// and inspected; creating, connecting and disconnecting are not built yet,
// but a malformed request to them is refused as Docker refuses it.
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

// create is not built: there is no network driver to create one with. A
// request Docker refuses whatever the driver (malformed, no name, a
// predefined name) is refused the same way; anything else is a 501.
func (n *networkRouter) create(_ context.Context, _ http.ResponseWriter, r *http.Request, _ map[string]string) error {
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
	return httputils.NotImplemented(r)
}

func (n *networkRouter) connect(ctx context.Context, _ http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var req networktypes.ConnectOptions
	return n.notBuilt(ctx, r, vars["id"], &req, func() string { return req.Container })
}

func (n *networkRouter) disconnect(ctx context.Context, _ http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var req networktypes.DisconnectOptions
	return n.notBuilt(ctx, r, vars["id"], &req, func() string { return req.Container })
}

// notBuilt answers connect and disconnect, which are not built: a
// malformed body is a 400, a network that does not exist a 404 (in that
// order, as in Docker), no container named a 404 (Docker looks the empty
// name up), anything else a 501.
func (n *networkRouter) notBuilt(ctx context.Context, r *http.Request, id string, body any, ctr func() string) error {
	if err := httputils.ReadJSON(r, body, true); err != nil {
		return err
	}
	if _, err := n.b.NetworkInspect(ctx, id); err != nil {
		return err
	}
	if ctr() == "" {
		return errdefs.NotFound(fmt.Errorf("No such container: "))
	}
	return httputils.NotImplemented(r)
}

// remove refuses as Docker does: every network here is predefined.
func (n *networkRouter) remove(ctx context.Context, _ http.ResponseWriter, r *http.Request, vars map[string]string) error {
	nw, err := n.b.NetworkInspect(ctx, vars["id"])
	if err != nil {
		return err
	}
	if predefined[nw.Name] {
		return errdefs.Forbidden(fmt.Errorf("%s is a pre-defined network and cannot be removed", nw.Name))
	}
	return httputils.NotImplemented(r)
}
