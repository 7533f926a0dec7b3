package cri

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sdengine/engine/pkg/errdefs"
)

// grpcError gives an engine error the gRPC code of its class, so that the
// kubelet tells a missing sandbox (NotFound) from a bad request
// (InvalidArgument) and from a fault (Unknown). An error that already is a
// gRPC status keeps its code.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Unknown
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	default:
		switch errdefs.ClassOf(err) {
		case errdefs.ClassNotFound:
			code = codes.NotFound
		case errdefs.ClassInvalidParameter:
			code = codes.InvalidArgument
		case errdefs.ClassConflict:
			code = codes.FailedPrecondition
		case errdefs.ClassNotImplemented:
			code = codes.Unimplemented
		case errdefs.ClassUnavailable:
			code = codes.Unavailable
		case errdefs.ClassForbidden, errdefs.ClassUnauthorized:
			code = codes.PermissionDenied
		}
	}
	return status.Error(code, err.Error())
}

// Errors of the CRI's own checks.
func notFound(format string, a ...any) error {
	return status.Errorf(codes.NotFound, format, a...)
}

func invalid(format string, a ...any) error {
	return status.Errorf(codes.InvalidArgument, format, a...)
}

func unimplemented(format string, a ...any) error {
	return status.Errorf(codes.Unimplemented, format, a...)
}

func alreadyExists(err error) error {
	return status.Error(codes.AlreadyExists, err.Error())
}

// isNotFound says whether err means that the thing asked for is not there,
// whether the engine or the CRI's own checks said so.
func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound || errdefs.IsNotFound(err)
}
