// Package router defines a route: one method and path served by one
// handler. Each resource's router lives in its own subpackage.
package router

import "github.com/sdengine/engine/api/server/httputils"

// Route is one endpoint.
type Route struct {
	Method  string
	Path    string
	Handler httputils.APIFunc
	// Body is what the route reads from the request body, which decides
	// how much of it the server lets it read (api/server/limits.go). The
	// zero value is the default for a route that takes no body or a small
	// JSON one.
	Body BodyClass
}

// BodyClass says what kind of request body a route takes.
type BodyClass int

const (
	// BodySmall is a route without a body or with a small JSON body
	// (options, credentials, an exec start).
	BodySmall BodyClass = iota
	// BodyConfig is a route whose body is a container or exec
	// configuration: create, update, exec create.
	BodyConfig
	// BodyStream is a route whose body is a stream of any length (an image
	// tarball, a build context, an archive): never limited.
	BodyStream
)

// Router is a group of routes for one resource.
type Router interface {
	Routes() []Route
}
