// Package plugin routes the plugin endpoints that take a JSON body. There
// are no plugins here: a malformed request is refused as Docker refuses it,
// a plugin named is not found, and anything else is a 501.
package plugin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types"

	"github.com/sdengine/engine/api/server/httputils"
	"github.com/sdengine/engine/api/server/router"
	"github.com/sdengine/engine/pkg/errdefs"
)

type pluginRouter struct{}

// New returns the plugin router.
func New() router.Router { return pluginRouter{} }

func (pluginRouter) Routes() []router.Route {
	return []router.Route{
		{Method: http.MethodPost, Path: "/plugins/pull", Handler: pull},
		{Method: http.MethodPost, Path: "/plugins/{name:.*}/set", Handler: set},
		{Method: http.MethodPost, Path: "/plugins/{name:.*}/upgrade", Handler: upgrade},
	}
}

func pull(_ context.Context, _ http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var privileges types.PluginPrivileges
	if err := httputils.ReadJSON(r, &privileges, true); err != nil {
		return err
	}
	if err := checkRemote(r.FormValue("remote")); err != nil {
		return err
	}
	return httputils.NotImplemented(r)
}

func set(_ context.Context, _ http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var args []string
	if err := httputils.ReadJSON(r, &args, true); err != nil {
		return err
	}
	return noSuchPlugin(vars["name"])
}

func upgrade(_ context.Context, _ http.ResponseWriter, r *http.Request, vars map[string]string) error {
	var privileges types.PluginPrivileges
	if err := httputils.ReadJSON(r, &privileges, true); err != nil {
		return err
	}
	if err := checkRemote(r.FormValue("remote")); err != nil {
		return err
	}
	return noSuchPlugin(vars["name"])
}

// checkRemote refuses a plugin reference that is not one (Docker parses
// it before anything else too).
func checkRemote(remote string) error {
	if _, err := reference.ParseNormalizedNamed(remote); err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid plugin reference %q: %w", remote, err))
	}
	return nil
}

// noSuchPlugin is the answer for any plugin named: none is ever installed.
func noSuchPlugin(name string) error {
	return errdefs.NotFound(fmt.Errorf("plugin %q not found", name))
}
