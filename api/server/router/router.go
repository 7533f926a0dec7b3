// Package router defines a route: one method and path served by one
// handler. Each resource's router lives in its own subpackage.
package router

import "github.com/sdengine/engine/api/server/httputils"

// Route is one endpoint.
type Route struct {
	Method  string
	Path    string
	Handler httputils.APIFunc
}

// Router is a group of routes for one resource.
type Router interface {
	Routes() []Route
}
