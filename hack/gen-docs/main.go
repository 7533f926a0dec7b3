// Command gen-docs writes the man pages, the markdown reference and the
// bash, fish and zsh completion scripts from the docker and dockerd cobra
// commands themselves, so the documentation cannot drift from the flags.
//
//	go run ./hack/gen-docs -man man -md docs/reference -completion contrib/completion
//
// Long descriptions that belong in the manual but not in --help (the
// --init=systemd profile, dockerd's files and signals) live in man/src as
// markdown and are attached to the commands only here.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
)

func main() {
	var o options
	flag.StringVar(&o.manDir, "man", "", "write man pages under `DIR`/man1 and DIR/man8")
	flag.StringVar(&o.mdDir, "md", "", "write the markdown reference into `DIR`")
	flag.StringVar(&o.completionDir, "completion", "", "write completion scripts under `DIR`/{bash,fish,zsh}")
	flag.StringVar(&o.srcDir, "src", "man/src", "directory of the hand-written long descriptions")
	flag.Parse()
	if flag.NArg() > 0 || (o.manDir == "" && o.mdDir == "" && o.completionDir == "") {
		fmt.Fprintln(os.Stderr, "usage: gen-docs [-man DIR] [-md DIR] [-completion DIR] [-src man/src]")
		os.Exit(2)
	}
	// The defaults as in a plain environment: these change the TLS flags'.
	for _, v := range []string{"DOCKER_CERT_PATH", "DOCKER_CONFIG", "DOCKER_TLS", "DOCKER_TLS_VERIFY"} {
		os.Unsetenv(v)
	}
	if err := generate(o); err != nil {
		slog.Error("gen-docs", "err", err)
		os.Exit(1)
	}
}
