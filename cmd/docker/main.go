// Command docker is this engine's Docker-compatible command line client.
package main

import (
	"os"

	"github.com/sdengine/engine/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
