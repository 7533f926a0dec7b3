// Command docker-shim is the container shim (one per group of containers,
// --shim-group-size), libcontainer's init and a CRI pod's infra process.
// It is a separate binary from dockerd so that it carries only what these
// need: every container start and every exec runs its init path, and
// the Go package initialisers of the whole daemon would cost tens of
// milliseconds each time.
package main

import (
	"fmt"
	"os"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	"github.com/sdengine/engine/cri/podinfra"
	"github.com/sdengine/engine/daemon/execdriver/shim"
	"github.com/sdengine/engine/daemon/execdriver/shimproto"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "init":
			libcontainer.Init() // never returns
		case shimproto.ShimCommand:
			shim.Main(os.Args[2:]) // never returns
		case podinfra.Command:
			podinfra.Main() // never returns
		}
	}
	fmt.Fprintln(os.Stderr, "docker-shim is started by dockerd, one per group of containers; it is not meant to be run by hand")
	os.Exit(2)
}
