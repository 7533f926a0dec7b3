//go:build tools

// Package deps pins the modules the engine builds on, so that go.sum is
// complete before the packages that use them exist.
package deps

import (
	_ "github.com/coreos/go-systemd/v22/activation"
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/go-systemd/v22/journal"
	_ "github.com/creack/pty"
	_ "github.com/cyphar/filepath-securejoin"
	_ "github.com/docker/docker/api/types"
	_ "github.com/docker/docker/api/types/container"
	_ "github.com/docker/docker/client"
	_ "github.com/docker/docker/errdefs"
	_ "github.com/docker/docker/pkg/jsonmessage"
	_ "github.com/docker/docker/pkg/namesgenerator"
	_ "github.com/docker/docker/pkg/stdcopy"
	_ "github.com/docker/docker/pkg/streamformatter"
	_ "github.com/docker/docker/pkg/stringid"
	_ "github.com/docker/go-units"
	_ "github.com/godbus/dbus/v5"
	_ "github.com/gorilla/mux"
	_ "github.com/moby/profiles/seccomp"
	_ "github.com/moby/sys/mountinfo"
	_ "github.com/moby/sys/user"
	_ "github.com/moby/term"
	_ "github.com/opencontainers/cgroups"
	_ "github.com/opencontainers/go-digest"
	_ "github.com/opencontainers/image-spec/specs-go/v1"
	_ "github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
	_ "github.com/opencontainers/runc/libcontainer/specconv"
	_ "github.com/opencontainers/runc/libcontainer/utils"
	_ "github.com/opencontainers/runtime-spec/specs-go"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "github.com/vishvananda/netlink"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
)
