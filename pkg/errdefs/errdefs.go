// Package errdefs classifies errors so that the API layer can map them to
// Docker's HTTP status codes without knowing where they came from.
//
// A package wraps an error once, where the class is known:
//
//	return errdefs.NotFound(fmt.Errorf("No such container: %s", name))
//
// and callers may wrap it further with fmt.Errorf("...: %w", err); the class
// survives because the checks walk the Unwrap chain.
package errdefs

import (
	"errors"
)

// Class is the kind of failure an error reports.
type Class int

// The classes, each with the HTTP status the Engine API gives it.
const (
	ClassUnknown Class = iota
	ClassNotFound
	ClassInvalidParameter
	ClassConflict
	ClassNotImplemented
	ClassUnavailable
	ClassForbidden
	ClassNotModified
	ClassUnauthorized
)

type classified struct {
	err   error
	class Class
}

func (c *classified) Error() string { return c.err.Error() }
func (c *classified) Unwrap() error { return c.err }

func wrap(err error, class Class) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: class}
}

// NotFound marks err as "the named object does not exist" (404).
func NotFound(err error) error { return wrap(err, ClassNotFound) }

// InvalidParameter marks err as a bad request from the client (400).
func InvalidParameter(err error) error { return wrap(err, ClassInvalidParameter) }

// Conflict marks err as a clash with the current state (409).
func Conflict(err error) error { return wrap(err, ClassConflict) }

// NotImplemented marks err as a feature this engine does not have (501).
func NotImplemented(err error) error { return wrap(err, ClassNotImplemented) }

// Unavailable marks err as a temporary inability to serve (503).
func Unavailable(err error) error { return wrap(err, ClassUnavailable) }

// Forbidden marks err as an operation that is not allowed (403).
func Forbidden(err error) error { return wrap(err, ClassForbidden) }

// NotModified marks err as "nothing to do" (304), e.g. starting a started container.
func NotModified(err error) error { return wrap(err, ClassNotModified) }

// Unauthorized marks err as credentials a registry refused (401).
func Unauthorized(err error) error { return wrap(err, ClassUnauthorized) }

// ClassOf returns the outermost class found in err's chain.
func ClassOf(err error) Class {
	var c *classified
	if errors.As(err, &c) {
		return c.class
	}
	return ClassUnknown
}

// IsNotFound reports whether err is classified as not found.
func IsNotFound(err error) bool { return ClassOf(err) == ClassNotFound }

// IsInvalidParameter reports whether err is classified as a bad parameter.
func IsInvalidParameter(err error) bool { return ClassOf(err) == ClassInvalidParameter }

// IsConflict reports whether err is classified as a conflict.
func IsConflict(err error) bool { return ClassOf(err) == ClassConflict }

// HTTPStatus maps err's class to the status code Docker uses for it.
// Anything unclassified is a real fault: 500. The codes are written out
// rather than taken from net/http: the shim, which starts afresh for
// every container and exec, imports this package, and net/http's
// package initialisation would be paid on each of those starts.
func HTTPStatus(err error) int {
	switch ClassOf(err) {
	case ClassNotFound:
		return 404
	case ClassInvalidParameter:
		return 400
	case ClassConflict:
		return 409
	case ClassNotImplemented:
		return 501
	case ClassUnavailable:
		return 503
	case ClassForbidden:
		return 403
	case ClassNotModified:
		return 304
	case ClassUnauthorized:
		return 401
	}
	return 500
}

// IsNotModified reports whether err is classified as not modified.
func IsNotModified(err error) bool { return ClassOf(err) == ClassNotModified }
