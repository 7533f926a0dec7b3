package command

import (
	"fmt"
	"net"

	"github.com/coreos/go-systemd/v22/activation"
)

// activated returns the sockets systemd passed in (`-H fd://`), or the one
// named (`-H fd://docker.socket` by its FileDescriptorName).
func activated(name string) ([]net.Listener, error) {
	if name == "" {
		ls, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("socket activation: %w", err)
		}
		if len(ls) == 0 {
			return nil, fmt.Errorf("no sockets found via socket activation: make sure the service was started by systemd")
		}
		return ls, nil
	}
	named, err := activation.ListenersWithNames()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	ls := named[name]
	if len(ls) == 0 {
		return nil, fmt.Errorf("no socket named %q passed by systemd", name)
	}
	return ls, nil
}
