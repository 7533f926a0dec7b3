// Command docker is this engine's Docker-compatible command line client.
package main

import (
	"os"

	"github.com/sdengine/engine/cli"
	"github.com/sdengine/engine/cli/command"
)

func main() {
	// First: what the CLI was started with (socket activation,
	// descriptors for --preserve-fds), before it opens any of its own.
	command.NoteInherited()
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
