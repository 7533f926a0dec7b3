package daemon

import (
	"context"
	"errors"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ContainerReopenLog makes the container's log driver reopen its file.
func (d *Daemon) ContainerReopenLog(ctx context.Context, name string) error {
	return errdefs.NotImplemented(errors.New("reopening a container's log is not implemented yet"))
}
