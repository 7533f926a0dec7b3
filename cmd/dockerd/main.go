// Command dockerd is the engine's daemon. The same binary is also the
// container shim (one per group of containers), libcontainer's init and a
// CRI pod's infra process, chosen by its first argument.
package main

import (
	"fmt"
	"os"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	"github.com/sdengine/engine/cri/podinfra"
	"github.com/sdengine/engine/daemon/command"
	"github.com/sdengine/engine/daemon/execdriver/shim"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/daemon/hooks"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "init":
			libcontainer.Init() // never returns
		case shimproto.ShimCommand:
			shim.Main(os.Args[2:]) // never returns
		case hooks.Command:
			hooks.Main(os.Args[2:]) // never returns
		case podinfra.Command:
			podinfra.Main() // never returns
		}
	}
	if err := command.New().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dockerd:", err)
		os.Exit(1)
	}
}
