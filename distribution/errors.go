package distribution

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/sdengine/engine/pkg/errdefs"
)

// registryCause renders a registry's error as Docker's errcode does:
// "manifest unknown: manifest unknown", "unauthorized: authentication required".
func registryCause(te *transport.Error) string {
	var parts []string
	for _, d := range te.Errors {
		code := strings.ToLower(strings.ReplaceAll(string(d.Code), "_", " "))
		if d.Message != "" {
			parts = append(parts, code+": "+d.Message)
		} else {
			parts = append(parts, code)
		}
	}
	if len(parts) == 0 {
		switch te.StatusCode {
		case http.StatusUnauthorized:
			return "unauthorized: authentication required"
		case http.StatusForbidden:
			return "denied: requested access to the resource is denied"
		case http.StatusNotFound:
			return "not found"
		}
		return fmt.Sprintf("unexpected status from registry: %d %s", te.StatusCode, http.StatusText(te.StatusCode))
	}
	return strings.Join(parts, "; ")
}

func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}

// pullError turns a registry error about named into Docker's message and
// class: a missing repository (or one the credentials do not open) is
// "pull access denied ...", a missing tag "manifest for X not found",
// refused credentials "unauthorized: ..." (401).
func pullError(err error, named reference.Named, withAuth bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var te *transport.Error
	if !errors.As(err, &te) {
		return err
	}
	cause := registryCause(te)
	switch {
	case hasCode(te, transport.ManifestUnknownErrorCode) && !hasCode(te, transport.NameUnknownErrorCode):
		return errdefs.NotFound(fmt.Errorf("manifest for %s not found: %s", reference.FamiliarString(named), cause))
	case (te.StatusCode == http.StatusUnauthorized || hasCode(te, transport.UnauthorizedErrorCode)) && withAuth:
		return errdefs.Unauthorized(errors.New(cause))
	case hasCode(te, transport.NameUnknownErrorCode, transport.DeniedErrorCode, transport.UnauthorizedErrorCode) ||
		te.StatusCode == http.StatusNotFound || te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden:
		return errdefs.NotFound(fmt.Errorf("pull access denied for %s, repository does not exist or may require 'docker login': %s",
			reference.FamiliarName(named), cause))
	}
	return fmt.Errorf("%s: %w", reference.FamiliarString(named), err)
}

// pushError: refused credentials are 401 "unauthorized: ...", a
// repository the user may not write "denied: ...".
func pushError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var te *transport.Error
	if !errors.As(err, &te) {
		return err
	}
	cause := registryCause(te)
	switch {
	case te.StatusCode == http.StatusUnauthorized || hasCode(te, transport.UnauthorizedErrorCode):
		return errdefs.Unauthorized(errors.New(cause))
	case te.StatusCode == http.StatusForbidden || hasCode(te, transport.DeniedErrorCode):
		return errdefs.Forbidden(errors.New(cause))
	}
	return err
}
