// Command pause is the sandbox ("pause") image's only process for the
// podstart benchmark's containerd (hack/bench/README.md): containerd's CRI
// needs a sandbox image and this host has no registry access. As PID 1 of
// the pod it holds the namespaces, reaps orphans and exits on SIGTERM or
// SIGINT. Built static (CGO_ENABLED=0) by hack/bench/run.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// Signals coalesce: reap every child that has exited.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
