// Command fd3server is a socket-activated server for the integration
// tests: it accepts one connection on the listening socket it got as fd 3
// (LISTEN_FDS), answers with what socket activation told it, and exits.
// Built static, it runs in any image.
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	l, err := net.FileListener(os.NewFile(3, "listen"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fd 3:", err)
		os.Exit(1)
	}
	c, err := l.Accept()
	if err != nil {
		fmt.Fprintln(os.Stderr, "accept:", err)
		os.Exit(1)
	}
	fmt.Fprintf(c, "hello LISTEN_FDS=%s LISTEN_PID=%s LISTEN_FDNAMES=%s pid=%d\n",
		os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDNAMES"), os.Getpid())
	c.Close()
}
